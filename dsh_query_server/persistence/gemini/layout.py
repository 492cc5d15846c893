"""Where Gemini CLI keeps its sessions and what names them (importers.md §7.1–§7.2).

``<home>/tmp/<project>/chats/`` holds ``session-<YYYY-MM-DDTHH-MM>-<id8>.jsonl`` (and the older
one-file ``.json``) per main session, and ``<parent id>/<id>.jsonl`` (or ``.json``) per sub-agent
(google-gemini/gemini-cli ``packages/core/src/services/chatRecordingService.ts``,
``initialize``). ``<project>`` is a short slug owned through ``<project>/.project_root``, or, before
the project registry, the SHA-256 of the project root (``packages/core/src/config/storage.ts``,
``projectRegistry.ts``).
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass

from ... import jsoncodec
from ...cancel import CancelToken
from ..importing.backend import key_text
from ..importing.emitter import JSONObject
from ..importing.lines import Record
from ..importing.survey import Survey, is_dir
from ..importing.values import MAX_SAFE, obj, parse_time

SESSION_PREFIX = "session-"
REGISTRY = "projects.json"
ROOT_MARKER = ".project_root"
_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")
_SMALL = 1_048_576


@dataclass(frozen=True, slots=True)
class SessionFile:
    """A session file found by the walk: its project directory's name and, for a sub-agent,
    the name of the directory that names its parent session."""

    path: str
    project: str
    parent: str | None
    document: bool  # a one-file ``.json`` session

    @property
    def named(self) -> str:
        """What the file name says of the id: a sub-agent's whole (sanitized) id, or the first
        eight characters of a main session's."""
        stem = os.path.basename(self.path).rsplit(".", 1)[0]
        return stem if self.parent is not None else stem.rsplit("-", 1)[-1]


def sanitized(session_id: str) -> str:
    """Gemini CLI's ``sanitizeFilenamePart`` (``packages/core/src/utils/fileUtils.ts``)."""
    return _UNSAFE.sub("_", session_id)


def names(session_id: str, sub: bool) -> str:
    return sanitized(session_id) if sub else sanitized(session_id)[:8]


def _is_session(name: str) -> bool:
    return name.endswith((".jsonl", ".json"))


def walk(sv: Survey, home: str, token: CancelToken) -> list[SessionFile]:
    """Every session file under ``<home>/tmp/*/chats/`` (directories its proofs cover are not
    listed again)."""
    out: list[SessionFile] = []
    for project in sv.entries(os.path.join(home, "tmp")):
        token.raise_if_cancelled()
        if not is_dir(project):
            continue
        for entry in sv.entries(os.path.join(project.path, "chats"), strict=False):
            if is_dir(entry):
                for inner in sv.entries(entry.path, strict=False):
                    if _is_session(inner.name) and not is_dir(inner):
                        doc = inner.name.endswith(".json")
                        out.append(SessionFile(inner.path, project.name, entry.name, doc))
            elif entry.name.startswith(SESSION_PREFIX) and _is_session(entry.name):
                out.append(
                    SessionFile(entry.path, project.name, None, entry.name.endswith(".json"))
                )
    return out


# -- the session record (the header's anchor) ----------------------------------------------


@dataclass(frozen=True, slots=True)
class Anchor:
    session_id: str
    created_at: int
    project_hash: str | None
    subagent: bool  # ``kind: "subagent"``


def is_anchor(v: dict[str, object]) -> bool:
    """The JSONL session record: what ``loadConversationRecord`` takes for metadata (a string
    ``sessionId`` and ``projectHash``) and for nothing it checks first."""
    if isinstance(v.get("$rewindTo"), str) or isinstance(v.get("id"), str):
        return False
    if isinstance(v.get("$set"), (dict, list)):
        return False
    return isinstance(v.get("sessionId"), str) and isinstance(v.get("projectHash"), str)


def anchor_of(v: JSONObject) -> Anchor:
    created = parse_time(v.get("startTime"))
    if created is None:
        created = parse_time(v.get("lastUpdated")) or 0
    project_hash = v.get("projectHash")
    return Anchor(
        str(v["sessionId"]),
        min(max(created, 0), MAX_SAFE),
        project_hash if isinstance(project_hash, str) else None,
        v.get("kind") == "subagent",
    )


def derive(rec: Record) -> Anchor:
    return anchor_of(rec.value)


def document_anchor(doc: object) -> Anchor | None:
    """A ``.json`` session's anchor: the document itself, when it names its session."""
    d = obj(doc)
    return anchor_of(d) if d is not None and isinstance(d.get("sessionId"), str) else None


def read_document(path: str) -> tuple[os.stat_result | None, Anchor | None]:
    """A survey reader for ``.json`` sessions: the file's stat and its anchor (None when it
    does not parse or names no session; no stat when it vanished)."""
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            data = f.read()
    except FileNotFoundError:
        return None, None
    except OSError:
        try:
            return os.stat(path), None
        except OSError:
            return None, None
    try:
        return st, document_anchor(jsoncodec.loads(data))
    except (ValueError, RecursionError):  # not JSON, or nested past the parser
        return st, None


# -- the project root (the header's cwd) ---------------------------------------------------


def _read_text(path: str) -> tuple[os.stat_result | None, str | None]:
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            return st, f.read(_SMALL).decode("utf-8", "replace")
    except FileNotFoundError:
        return None, None
    except OSError:
        return None, None


def _read_registry(path: str) -> tuple[os.stat_result | None, dict[str, str]]:
    """``projects.json``: absolute project root -> slug (unreadable or invalid: none)."""
    st, text = _read_text(path)
    try:
        projects = obj((obj(jsoncodec.loads(text or "")) or {}).get("projects"))
    except (ValueError, RecursionError):  # not JSON, or nested past the parser
        projects = None
    table = {k: v for k, v in (projects or {}).items() if isinstance(v, str) and k.startswith("/")}
    return st, table


@dataclass(frozen=True, slots=True)
class Root:
    """A project's root as the header's cwd (None: unknown), the revision part that proves it
    and the files read for it."""

    cwd: str | None
    revision: str
    files: tuple[str, ...]


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def project_root(sv: Survey, home: str, project: str, project_hash: str | None) -> Root:
    """``<project>/.project_root`` when it holds an absolute path; else the registry's root
    whose slug is ``<project>``, else whose SHA-256 is ``<project>``, else the session's
    ``projectHash``; else unknown."""
    marker = os.path.join(home, "tmp", project, ROOT_MARKER)
    key, text = sv.sidecar(marker, _read_text, None)
    root = text.strip() if text is not None else ""
    if root.startswith("/") and key is not None:
        return Root(root, f";root:{key_text(key[:4])}", (marker,))
    registry = os.path.join(home, REGISTRY)
    _, table = sv.sidecar(registry, _read_registry, {})
    digests = {_digest(path): path for path in table}
    named = [path for path, slug in table.items() if slug == project]
    for path in (*named[:1], digests.get(project), digests.get(project_hash or "")):
        if path is not None:
            return Root(path, f";root:{_digest(path)[:16]}", (marker, registry))
    return Root(None, ";root:-", (marker, registry))
