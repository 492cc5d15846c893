"""``sessionQuery/exportSession`` (tools.md §2.4): the ZIP of §2.3 written to a private
temporary file next to the target, then published atomically."""

from __future__ import annotations

import contextlib
import os
import secrets
import time
import zipfile
from typing import Any

from .. import errors
from ..cancel import CancelToken
from ..errors import QueryError, inner_message
from ..query.loaded import check_cancelled
from ..query.service import SessionQueryService
from .collect import check_root, descendants, session_content
from .encode import segment
from .media import MEDIA_TYPES, media_bytes, media_refs
from .params import ExportEntry, ExportOptions, ExportResult

EXPORT_FAILED = errors.EXPORT_FAILED


def export_session(
    service: SessionQueryService,
    session_id: str,
    output_path: str,
    options: ExportOptions,
    *,
    include_descendants: bool = False,
    include_media: bool = True,
    overwrite: bool = False,
    workspace_roots: list[str] | None = None,
    token: CancelToken,
) -> ExportResult:
    """Write the §2.3 archive for ``session_id`` to ``output_path`` (absolute)."""
    started = time.localtime()
    with token.counting(share=False):  # the sessions exported own the percentage
        check_root(service, session_id, workspace_roots, token)
    if not overwrite and os.path.lexists(output_path):
        raise QueryError(EXPORT_FAILED, f'export target "{output_path}" already exists')
    temp = f"{output_path}.{secrets.token_hex(6)}.tmp"
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        raise _write_error(output_path, exc) from None
    entries: list[ExportEntry] = []
    try:
        with (
            os.fdopen(fd, "wb") as raw,
            zipfile.ZipFile(
                raw,
                "w",
                compression=zipfile.ZIP_DEFLATED,
                compresslevel=options.level,
                allowZip64=True,
            ) as archive,
        ):
            stamp = started[:6]

            def add(name: str, data: bytes, **ids: str) -> None:
                check_cancelled(token)
                info = zipfile.ZipInfo(name, date_time=stamp)
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = 0o100600 << 16
                try:
                    archive.writestr(info, data, compresslevel=options.level)
                except OSError as exc:
                    raise _write_error(output_path, exc) from None
                entries.append(ExportEntry(name=name, bytes=len(data), **ids))

            # Progress (protocol.md §8): the percentage counts sessions, the one measure known
            # early; the attachments, counted only once every session is read, say theirs in
            # the message.
            progress = token.progress
            progress.report("exporting the session")
            media: dict[str, dict[str, Any]] = {}
            content = session_content(service, session_id, token, descendant=False)
            if include_media:
                media_refs(content, media)
            add("session.jsonl", content, sessionId=session_id)
            if include_descendants:
                progress.report("listing sub-agents")
                with token.counting(share=False):
                    sids = descendants(service, session_id, workspace_roots, token)
                total = 1 + len(sids)
                progress.report(f"exported 1 of {total:,} sessions", 1, total)
                used: set[str] = set()
                for done, sid in enumerate(sids, 2):
                    content = session_content(service, sid, token, descendant=True)
                    if include_media:
                        media_refs(content, media)
                    seg = segment(sid)
                    name, n = seg, 1
                    while name in used:
                        n += 1
                        name = f"{seg}~{n}"
                    used.add(name)
                    add(f"subagents/{name}/session.jsonl", content, sessionId=sid)
                    progress.report(f"exported {done:,} of {total:,} sessions", done, total)
            for done, aid in enumerate(sorted(media), 1):
                attachment = media[aid]
                ext = MEDIA_TYPES[attachment["mediaType"]]
                add(
                    f"media/{aid}.{ext}",
                    media_bytes(options.attachments, attachment),
                    attachmentId=aid,
                )
                progress.report(f"added {done:,} of {len(media):,} attachments")
            progress.report("writing the archive")
            archive.close()
            raw.flush()
            os.fsync(raw.fileno())
        check_cancelled(token)
        _publish(temp, output_path, overwrite)
        size = os.stat(output_path).st_size
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return ExportResult(path=output_path, bytes=size, entries=entries)


def _publish(temp: str, target: str, overwrite: bool) -> None:
    try:
        if overwrite:
            os.replace(temp, target)
            return
        try:
            os.link(temp, target)
        except FileExistsError:
            raise QueryError(EXPORT_FAILED, f'export target "{target}" already exists') from None
        os.unlink(temp)
    except OSError as exc:
        raise _write_error(target, exc) from None


def _write_error(path: str, exc: BaseException) -> QueryError:
    return QueryError(
        EXPORT_FAILED, f'failed to write export archive "{path}": {inner_message(exc)}'
    )
