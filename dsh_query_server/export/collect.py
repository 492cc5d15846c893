"""What an export includes (tools.md §2.2, §2.4): the root and its visible descendants, and
the file each one gives (live log, raw artifact or logical log)."""

from __future__ import annotations

from typing import Any

from .. import errors
from ..cancel import CancelToken
from ..errors import QueryError
from ..model.workspace import Workspace
from ..persistence.contract.errors import SessionRawArtifactsUnsupportedError
from ..query import lineage
from ..query.loaded import Record, check_cancelled, not_found
from ..query.service import SessionQueryService
from .encode import encode_log

EXPORT_FAILED = errors.EXPORT_FAILED


def _visible(cwd: Any, roots: list[str] | None) -> bool:
    return roots is None or Workspace(roots, "/").visible(cwd)


def session_content(
    service: SessionQueryService, session_id: str, token: CancelToken, descendant: bool
) -> bytes:
    """§2.2: the file one included session gives."""
    live = service.store.snapshot(session_id)
    if live is not None:
        return encode_log(live.header, live.events)
    binding = service.binding.current()
    if binding is not None:
        try:
            artifact = binding.logs.raw(session_id, token)
        except SessionRawArtifactsUnsupportedError:
            pass  # no raw artifacts (or a composite member without): its logical log (step 3)
        else:
            if artifact is None:
                raise _vanished(session_id, descendant)
            return artifact.content
    try:
        loaded = service.load(session_id, token)
    except QueryError as exc:
        if exc.code == errors.SESSION_NOT_FOUND:
            raise _vanished(session_id, descendant) from None
        raise
    return encode_log(loaded.header, loaded.events)


def _vanished(session_id: str, descendant: bool) -> QueryError:
    if descendant:
        return QueryError(
            EXPORT_FAILED,
            f'subagent "{session_id}" has no stored log artifact',
            session_id=session_id,
        )
    return not_found(session_id)


def check_root(
    service: SessionQueryService, session_id: str, roots: list[str] | None, token: CancelToken
) -> None:
    """§2.4 step 2: live, or else listed; with roots, a hidden root answers as a missing one
    after the same work (one listing)."""
    check_cancelled(token)
    live = service.store.snapshot(session_id)
    if live is not None and roots is None:
        return
    if live is not None and _visible(live.header.cwd, roots):
        return
    listed = [r for r in service.corpus(token) if r.header.id == session_id and not r.live]
    if live is not None or not listed or not _visible(listed[0].header.cwd, roots):
        raise not_found(session_id)


def descendants(
    service: SessionQueryService, session_id: str, roots: list[str] | None, token: CancelToken
) -> list[str]:
    """The root's lineage descendants in preorder, deduplicated; with roots, an invisible one is
    left out with its whole subtree."""
    records: list[Record] = service.corpus(token)
    lineage.trace(records, session_id)  # the lineage errors of traceSession
    groups = lineage.children_index(records)
    seen = {session_id}
    out: list[str] = []
    stack = list(reversed(groups.get(session_id, [])))
    while stack:
        record = stack.pop()
        sid = record.header.id
        if sid in seen or not _visible(record.header.cwd, roots):
            continue
        seen.add(sid)
        out.append(sid)
        stack.extend(reversed(groups.get(sid, [])))
    return out
