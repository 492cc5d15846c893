"""The ``claude:<home>`` backend (importers.md §1.1–§1.2, §3): layout, headers, revisions."""

from __future__ import annotations

import os
from dataclasses import dataclass

from ... import jsoncodec
from ...cancel import CancelToken
from ...model.event import Header
from ..base import Inspection
from ..importing.backend import (
    Candidate,
    ImportBackend,
    ScanCache,
    feed,
    key_text,
    log_unreadable,
    pick_winner,
    scan_anchor,
    stat_key,
    unreadable,
)
from ..importing.emitter import Emitter, JSONObject
from ..importing.values import MAX_SAFE, is_uuid, nonempty, obj, parse_time
from ..importing.window import MemoBuilder
from .mapper import PLUGIN, ClaudeMapper


@dataclass(frozen=True, slots=True)
class _File:
    """A transcript found by the layout walk (§1.1)."""

    path: str
    stem: str  # the trunk's stem ("" for a 2.0.x flat sub-agent: taken from the anchor)
    agent: str | None = None
    run: str | None = None
    flat: bool = False


@dataclass(frozen=True, slots=True)
class _Anchor:
    session_id: str
    time: int
    cwd: object
    version: object
    forked_from: object


@dataclass(frozen=True, slots=True)
class _Lineage:
    fields: JSONObject
    native_id: str
    trunk: bool
    copied: bool
    revision: str


@dataclass(frozen=True, slots=True)
class _Plan:
    file: _File
    anchor: _Anchor
    lineage: _Lineage


def _is_anchor(v: dict[str, object]) -> bool:
    return isinstance(v.get("sessionId"), str) and parse_time(v.get("timestamp")) is not None


def _scan(path: str, size: int, token: CancelToken) -> _Anchor | None:
    """§1.2: the header scan's anchor, or None."""
    rec = scan_anchor(path, size, token, _is_anchor)
    if rec is None:
        return None
    v = rec.value
    return _Anchor(
        str(v["sessionId"]),
        parse_time(v.get("timestamp")) or 0,
        v.get("cwd"),
        v.get("version"),
        v.get("forkedFrom"),
    )


def _scandir(path: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(path) as it:
            return list(it)
    except (FileNotFoundError, NotADirectoryError):
        return []


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _agent_of(name: str) -> str | None:
    if name.startswith("agent-") and name.endswith(".jsonl") and len(name) > 12:
        return name[6:-6]
    return None


class ClaudeBackend(ImportBackend):
    def __init__(self, home: str, uri: str) -> None:
        super().__init__(home, uri)
        self._scans: ScanCache[_Anchor] = ScanCache()
        # a trunk's header as built from its scan (same key: the header depends on nothing else)
        self._trunks: ScanCache[tuple[_Anchor, _Lineage, str, Header]] = ScanCache()

    # -- layout (§1.1) -----------------------------------------------------------------

    def _files(self, token: CancelToken) -> list[_File]:
        out: list[_File] = []
        for project in _scandir(os.path.join(self.home, "projects")):
            token.raise_if_cancelled()
            if not _is_dir(project):
                continue
            for entry in _scandir(project.path):
                name = entry.name
                if name.endswith(".jsonl"):
                    agent = _agent_of(name)
                    if agent is not None:
                        out.append(_File(entry.path, "", agent, flat=True))
                    elif not name.startswith("agent-"):
                        out.append(_File(entry.path, name[:-6]))
                elif _is_dir(entry):
                    out.extend(self._nested(entry.path, name))
        return out

    def _nested(self, session_dir: str, stem: str) -> list[_File]:
        out: list[_File] = []
        sub = os.path.join(session_dir, "subagents")
        for entry in _scandir(sub):
            agent = _agent_of(entry.name)
            if agent is not None:
                out.append(_File(entry.path, stem, agent))
            elif entry.name == "workflows" and _is_dir(entry):
                for run in _scandir(entry.path):
                    for inner in _scandir(run.path) if _is_dir(run) else []:
                        agent = _agent_of(inner.name)
                        if agent is not None:
                            out.append(_File(inner.path, stem, agent, run.name))
        return out

    # -- sidecars and lineage (§1.2) ---------------------------------------------------

    def _sidecar(self, path: str) -> tuple[str, JSONObject | None]:
        """A sidecar's revision part and its JSON object (None when absent or unreadable), read
        afresh: a sidecar may be rewritten in place."""
        try:
            with open(path, "rb") as f:
                st = os.fstat(f.fileno())
                value = obj(jsoncodec.loads(f.read(HEAD_SIDECAR)))
        except FileNotFoundError:
            return "-", None
        except (OSError, ValueError):
            try:
                return key_text(stat_key(os.stat(path))), None
            except OSError:
                return "-", None
        return key_text(stat_key(st)), value

    def _lineage(self, f: _File, anchor: _Anchor) -> _Lineage:
        if f.agent is None:
            forked = obj(anchor.forked_from)
            parent = nonempty(forked.get("sessionId")) if forked is not None else None
            if parent is None and is_uuid(f.stem) and anchor.session_id != f.stem:
                parent = anchor.session_id
            fields: JSONObject = {}
            if parent is not None and parent != f.stem:
                fields = {"parentSession": parent, "lineage": "fork"}
            return _Lineage(fields, f.stem, True, parent is not None, "")
        trunk = anchor.session_id if f.flat else f.stem
        folder = os.path.dirname(f.path)
        parents_dir = folder
        if f.run is not None:
            parents_dir = os.path.dirname(os.path.dirname(folder))
        revision, meta = self._sidecar(os.path.join(folder, f"agent-{f.agent}.meta.json"))
        parts = [revision]
        parent_agent = nonempty(meta.get("parentAgentId")) if meta is not None else None
        depth, seen, walk = 1, {f.agent}, parent_agent
        while walk is not None and walk not in seen and depth < MAX_SAFE:
            seen.add(walk)
            depth += 1
            rev, parent_meta = self._sidecar(os.path.join(parents_dir, f"agent-{walk}.meta.json"))
            parts.append(rev)
            walk = nonempty(parent_meta.get("parentAgentId")) if parent_meta is not None else None
        fields = {
            "parentSession": f"{trunk}/agent-{parent_agent}" if parent_agent else trunk,
            "origin": "subagent",
            "delegationDepth": depth,
            "lineage": "compaction" if f.agent.startswith("acompact") else "subagent",
        }
        preset = meta.get("agentType") if meta is not None else None
        if isinstance(preset, str):
            fields["agentPreset"] = preset
        return _Lineage(fields, trunk, False, False, "".join(f";meta:{p}" for p in parts))

    def _session_id(self, f: _File, anchor: _Anchor) -> str:
        if f.agent is None:
            return f.stem
        trunk = anchor.session_id if f.flat else f.stem
        middle = f"/workflows/{f.run}" if f.run is not None else ""
        return f"{trunk}{middle}/agent-{f.agent}"

    # -- headers -----------------------------------------------------------------------

    def _header(
        self,
        session_id: str,
        f: _File,
        anchor: _Anchor,
        lineage: _Lineage,
        approximate: list[str] | None,
    ) -> Header:
        value: JSONObject = {
            "version": 0,
            "id": session_id,
            "createdAt": min(max(anchor.time, 0), MAX_SAFE),
        }
        cwd = anchor.cwd
        if isinstance(cwd, str) and cwd.startswith("/"):
            value["cwd"] = cwd
        fields = dict(lineage.fields)
        kind = fields.pop("lineage", None)
        if fields.get("parentSession") == session_id:
            del fields["parentSession"]
        value.update(fields)
        source: JSONObject = {"agent": PLUGIN}
        if isinstance(anchor.version, str):
            source["agentVersion"] = anchor.version
        source["path"] = f.path
        if kind is not None:
            source["lineage"] = kind
        if approximate:
            source["approximate"] = approximate
        value["source"] = source
        return Header.from_value(value)

    def _anchor(self, f: _File, st: os.stat_result, token: CancelToken) -> _Anchor | None:
        hit, cached = self._scans.get(f.path, st)
        if hit:
            return cached
        anchor = _scan(f.path, st.st_size, token)
        if anchor is not None:
            self._scans.put(f.path, st, anchor)
        return anchor

    def candidates(self, token: CancelToken) -> dict[str, Candidate]:
        found: dict[str, Candidate] = {}
        if not self.check_home():
            return found
        seen: set[tuple[str, int, int]] = set()
        for f in self._files(token):
            token.raise_if_cancelled()
            try:
                st = os.stat(f.path)
                seen.add((f.path, st.st_dev, st.st_ino))
                anchor = self._anchor(f, st, token)
            except FileNotFoundError:
                continue
            except OSError as exc:
                log_unreadable(f.path, exc)
                continue
            if anchor is None:
                continue
            built = self._trunks.get(f.path, st)[1] if f.agent is None else None
            if built is None or built[0] is not anchor:
                lineage = self._lineage(f, anchor)
                sid = self._session_id(f, anchor)
                built = (anchor, lineage, sid, self._header(sid, f, anchor, lineage, None))
                if f.agent is None:  # a trunk's header is its scan's alone (no sidecars)
                    self._trunks.put(f.path, st, built)
            _, lineage, sid, header = built
            revision = "claude:" + key_text(stat_key(st)) + lineage.revision
            plan = _Plan(f, anchor, lineage)
            cand = Candidate(sid, f.path, header, revision, st.st_mtime_ns, plan, lineage.revision)
            pick_winner(found, cand)
        self._scans.retain(seen)
        self._trunks.retain(seen)
        return found

    # -- inspect (§3.3) ----------------------------------------------------------------

    def unlisted(self, session_id: str, token: CancelToken) -> str | None:
        for f in self._files(token):
            if f.flat:
                continue  # its id needs the anchor
            middle = f"/workflows/{f.run}" if f.run is not None else ""
            sid = f.stem if f.agent is None else f"{f.stem}{middle}/agent-{f.agent}"
            if sid == session_id and os.path.exists(f.path):
                return f.path
        return None

    def read(
        self, cand: Candidate, size: int, token: CancelToken, builder: MemoBuilder | None
    ) -> Inspection:
        plan = cand.plan
        if not isinstance(plan, _Plan):
            raise unreadable(self.rel(cand.path), "the transcript has no session record")
        f = plan.file
        # §3.3: the header comes from this read's own scan; a replaced file then shows as a
        # header that no longer matches the listed one (SOURCE_CONFLICT).
        anchor = _scan(cand.path, size, token)
        if anchor is None:
            raise unreadable(self.rel(cand.path), "no record names a session and a time")
        lineage = self._lineage(f, anchor)
        em = Emitter(PLUGIN, min(max(anchor.time, 0), MAX_SAFE))
        mapper = ClaudeMapper(em, lineage.trunk, lineage.native_id, lineage.copied)
        em.sink = builder.emitted if builder is not None else None
        feed(cand.path, size, token, mapper.feed, builder)
        mapper.finish()
        reasons = list(em.reasons)
        cwd = anchor.cwd
        if not (isinstance(cwd, str) and cwd.startswith("/")) and cwd is not None:
            reasons.insert(0, "cwd-not-absolute")
        header = self._header(cand.session_id, f, anchor, lineage, reasons)
        return Inspection(header, em.events)


HEAD_SIDECAR = 1_048_576
