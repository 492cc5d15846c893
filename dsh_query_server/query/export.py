"""Session export (tools.md §2): one ZIP of stored session logs, with sub-agents and media.

Every session in the corpus exports: a live one as its live log, a stored one as its raw artifact
when the backend exposes one, otherwise as its logical log (§2.2). The archive is written to a
private temporary file next to the target and published atomically (§2.4).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import time
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
from msgspec import UNSET

from .. import errors, jsoncodec
from ..cancel import CancelToken
from ..errors import QueryError, inner_message
from ..model.event import HEADER_FIELDS, Event, Header
from ..persistence.contract.capabilities import RawArtifactReader
from ..persistence.contract.errors import SessionRawArtifactsUnsupportedError
from ..persistence.contract.results import SessionRawArtifact
from ..persistence.logical.records import PackedRow, pack
from ..values import is_integer
from . import lineage
from .loaded import Record, check_cancelled, not_found
from .loading import stored_log_failure
from .service import SessionQueryService
from .workspace import Workspace

EXPORT_FAILED = errors.EXPORT_FAILED
MEDIA_TYPES = {"image/png": "png", "image/jpeg": "jpg", "image/webp": "webp", "image/gif": "gif"}
_ATTACHMENT_ID = re.compile(r"sha256:([0-9a-f]{64})")


# -- options, params, result --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ExportOptions:
    attachments: str | None  # the attachment store, or None for no store
    level: int  # DEFLATE level 0-9


def export_options(raw: dict[str, Any]) -> ExportOptions:
    """The keys ``attachments`` and ``sessionExportCompressionLevel`` (INVALID_CONFIG)."""
    level = raw.get("sessionExportCompressionLevel", 6)
    if not (is_integer(level) and 0 <= level <= 9):
        raise QueryError(
            errors.INVALID_CONFIG,
            "session-query: sessionExportCompressionLevel must be an integer 0-9",
        )
    if "attachments" in raw:
        store = raw["attachments"]
        if store is not None and not isinstance(store, str):
            raise QueryError(errors.INVALID_CONFIG, "session-query: attachments must be a string")
    else:
        home = os.environ.get("DSH_HOME") or os.path.join(os.path.expanduser("~"), ".dsh")
        store = os.path.join(home, "attachments", "v1")
    return ExportOptions(store, int(level))


class ExportParams(msgspec.Struct, forbid_unknown_fields=False):
    sessionId: str
    outputPath: str
    includeDescendants: bool = False
    includeMedia: bool = True
    overwrite: bool = False
    workspaceRoots: list[str] | None = None


class ExportEntry(msgspec.Struct, omit_defaults=True):
    name: str
    bytes: int
    sessionId: str | None = None
    attachmentId: str | None = None


class ExportResult(msgspec.Struct):
    path: str
    bytes: int
    entries: list[ExportEntry]


_KINDS = {
    "sessionId": "a string",
    "outputPath": "a string",
    "includeDescendants": "a boolean",
    "includeMedia": "a boolean",
    "overwrite": "a boolean",
    "workspaceRoots": "an array of absolute paths",
}


def parse_params(params: Any) -> ExportParams:
    """−32602 INVALID_REQUEST: ``<field> must be <kind>`` or a relative outputPath."""
    if not isinstance(params, dict):
        raise QueryError(errors.INVALID_REQUEST, "params must be an object")
    for name, kind in _KINDS.items():
        value = params.get(name)
        required = name in ("sessionId", "outputPath")
        if value is None and not required:
            continue
        if kind == "a string":
            ok = isinstance(value, str)
        elif kind == "a boolean":
            ok = isinstance(value, bool)
        else:
            ok = isinstance(value, list) and all(
                isinstance(v, str) and v.startswith("/") for v in value
            )
        if not ok:
            raise QueryError(errors.INVALID_REQUEST, f"{name} must be {kind}")
    if not params["outputPath"].startswith("/"):
        raise QueryError(errors.INVALID_REQUEST, "outputPath must be an absolute path")
    return msgspec.convert(
        {k: v for k, v in params.items() if k in _KINDS and v is not None}, ExportParams
    )


def export_method(
    service: SessionQueryService, params: Any, token: CancelToken, options: ExportOptions
) -> Any:
    """``sessionQuery/exportSession`` (§2.4): validated params in, the result as JSON values."""
    p = parse_params(params)
    result = export_session(
        service,
        p.sessionId,
        p.outputPath,
        options,
        include_descendants=p.includeDescendants,
        include_media=p.includeMedia,
        overwrite=p.overwrite,
        workspace_roots=p.workspaceRoots,
        token=token,
    )
    return msgspec.to_builtins(result)


# -- encoding (§2.2) ------------------------------------------------------------------------------


_EVENT_KEYS = ("type", "seq", "time", "data", "surfaceOp", "sourceEventSeqs", "ignorable")


def header_line(header: Header) -> bytes:
    value: dict[str, Any] = {"type": "session"}
    for name in HEADER_FIELDS:
        field = header.depth_or_zero if name == "delegationDepth" else header.get(name)
        if field is not UNSET:
            value[name] = field
    return _dumps(value) + b"\n"


def _integral(value: Any) -> Any:
    """Integral floats written without a fraction, iteratively (payloads nest deeply)."""
    if isinstance(value, float):
        return int(value) if value.is_integer() else value
    if not isinstance(value, (dict, list)):
        return value
    root: list[Any] = [value]
    stack: list[Any] = [value]
    while stack:
        node = stack.pop()
        items: Iterator[tuple[Any, Any]] = iter(
            node.items() if isinstance(node, dict) else enumerate(node)
        )
        for key, child in list(items):
            if isinstance(child, float) and child.is_integer():
                node[key] = int(child)
            elif isinstance(child, (dict, list)):
                stack.append(child)
    return root[0]


def _dumps(value: Any) -> bytes:
    return jsoncodec.dumps(_integral(value))


def event_line(event: Event) -> bytes:
    value = event.to_value()
    ordered = {k: value[k] for k in _EVENT_KEYS if k in value}
    ordered.update((k, v) for k, v in value.items() if k not in ordered)
    return _dumps(ordered) + b"\n"


def encode_log(header: Header, events: Sequence[Event]) -> bytes:
    """The whole log as one first-materialization batch with packChunks=true."""
    parts = [header_line(header)]
    for record in pack(list(events)):
        if isinstance(record, PackedRow):
            parts.append(
                _dumps(
                    {
                        "type": record.tag,
                        "seq0": record.seq0,
                        "time0": record.time0,
                        "data": record.data,
                    }
                )
                + b"\n"
            )
        else:
            parts.append(event_line(record))
    return b"".join(parts)


def segment(session_id: str) -> str:
    """Every UTF-16 code unit outside [A-Za-z0-9_-] becomes ``_``."""
    out: list[str] = []
    for ch in session_id:
        if ch.isascii() and (ch.isalnum() or ch in "_-"):
            out.append(ch)
        else:
            out.append("__" if ord(ch) > 0xFFFF else "_")
    return "".join(out)


# -- the export ---------------------------------------------------------------------------------


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
    reader = None if binding is None else binding.capabilities.raw
    if reader is not None:
        try:
            artifact = _read_raw(reader, session_id, token)
        except SessionRawArtifactsUnsupportedError:
            pass  # a composite member without raw artifacts: its logical log (step 3)
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


def _read_raw(
    reader: RawArtifactReader, session_id: str, token: CancelToken
) -> SessionRawArtifact | None:
    """``read_raw`` with its failures classified (§2.6, persistence.md §2.3)."""
    check_cancelled(token)
    try:
        return reader.read_raw(session_id, token)
    except SessionRawArtifactsUnsupportedError:
        raise
    except Exception as exc:  # noqa: BLE001 - classified as persistence.md §2.3
        raise stored_log_failure(session_id, exc, token, "read the stored log of session") from None


def _vanished(session_id: str, descendant: bool) -> QueryError:
    if descendant:
        return QueryError(
            EXPORT_FAILED,
            f'subagent "{session_id}" has no stored log artifact',
            session_id=session_id,
        )
    return not_found(session_id)


def _root(
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


def _descendants(
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


def _media_refs(content: bytes, found: dict[str, dict[str, Any]]) -> None:
    """Image attachment references of §2.3 in each line that parses as JSON (last one wins)."""
    for line in content.split(b"\n"):
        if b'"image"' not in line:
            continue
        try:
            value = jsoncodec.loads(line)
        except ValueError:
            continue
        if not isinstance(value, dict):
            continue
        data = value.get("data")
        if not isinstance(data, dict):
            continue
        roots: list[Any] = [data.get("content")]
        message = data.get("message")
        if isinstance(message, dict):
            roots.append(message.get("content"))
        inserted = data.get("inserted")
        if isinstance(inserted, list):
            roots += [i.get("content") for i in inserted if isinstance(i, dict)]
        chunk = data.get("chunk")
        if isinstance(chunk, dict) and chunk.get("type") == "block-end":
            roots.append([chunk.get("block")])
        stack = [r for r in roots if isinstance(r, list)]
        while stack:
            for block in stack.pop():
                if not isinstance(block, dict):
                    continue
                attachment = block.get("attachment")
                if block.get("type") == "image" and isinstance(attachment, dict):
                    aid, media = attachment.get("id"), attachment.get("mediaType")
                    if (
                        isinstance(aid, str)
                        and _ATTACHMENT_ID.fullmatch(aid)
                        and media in MEDIA_TYPES
                    ):
                        found[aid] = attachment
                nested = block.get("content")
                if isinstance(nested, list):
                    stack.append(nested)


_MAGIC = {"png": (b"\x89PNG\r\n\x1a\n",), "jpg": (b"\xff\xd8\xff",), "gif": (b"GIF87a", b"GIF89a")}


def _media_bytes(store: str | None, attachment: dict[str, Any]) -> bytes:
    aid = attachment["id"]

    def fail(reason: str) -> QueryError:
        return QueryError(EXPORT_FAILED, f'media "{aid}" could not be read: {reason}')

    if store is None:
        raise fail("no attachment store is configured")
    digest = aid.split(":", 1)[1]
    try:
        with open(os.path.join(store, "objects", digest[:2], digest), "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise fail("Attachment object is missing.") from None
    except OSError:
        raise fail("Unable to read image attachment.") from None
    if hashlib.sha256(data).hexdigest() != digest:
        raise fail("Stored attachment failed integrity verification.")
    ext = MEDIA_TYPES[attachment["mediaType"]]
    magic_ok = (
        (data[:4] == b"RIFF" and data[8:12] == b"WEBP")
        if ext == "webp"
        else any(data.startswith(m) for m in _MAGIC[ext])
    )
    if attachment.get("bytes") != len(data) or not magic_ok:
        raise fail("Stored attachment metadata does not match its reference.")
    return data


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
    _root(service, session_id, workspace_roots, token)
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

            media: dict[str, dict[str, Any]] = {}
            content = session_content(service, session_id, token, descendant=False)
            if include_media:
                _media_refs(content, media)
            add("session.jsonl", content, sessionId=session_id)
            if include_descendants:
                used: set[str] = set()
                for sid in _descendants(service, session_id, workspace_roots, token):
                    content = session_content(service, sid, token, descendant=True)
                    if include_media:
                        _media_refs(content, media)
                    seg = segment(sid)
                    name, n = seg, 1
                    while name in used:
                        n += 1
                        name = f"{seg}~{n}"
                    used.add(name)
                    add(f"subagents/{name}/session.jsonl", content, sessionId=sid)
            for aid in sorted(media):
                attachment = media[aid]
                ext = MEDIA_TYPES[attachment["mediaType"]]
                add(
                    f"media/{aid}.{ext}",
                    _media_bytes(options.attachments, attachment),
                    attachmentId=aid,
                )
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
