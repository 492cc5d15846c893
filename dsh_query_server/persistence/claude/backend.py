"""The ``claude:<home>`` backend (importers.md §1.1–§1.2, §3): layout, headers, revisions."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from ... import jsoncodec
from ...cancel import CancelToken
from ...model.event import Header
from ..contract.results import Inspection, Payloads, SkippedArtifact
from ..importing.backend import (
    Candidate,
    ImportBackend,
    Listing,
    StatKey,
    key_text,
    log_unreadable,
    pick_winner,
    stat_key,
    unreadable,
)
from ..importing.emitter import Emitter, JSONObject
from ..importing.lines import Record
from ..importing.survey import Clock, Survey, is_dir
from ..importing.transcripts import feed, scan_anchor
from ..importing.values import MAX_SAFE, is_uuid, nonempty, obj, parse_time
from ..importing.window import MemoBuilder
from ..importing.worker import Init
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
    sidecars: tuple[str, ...] = ()  # the sidecars read for it


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
    return None if rec is None else _anchor_of(rec)


def _anchor_of(rec: Record) -> _Anchor:
    v = rec.value
    return _Anchor(
        str(v["sessionId"]),
        parse_time(v.get("timestamp")) or 0,
        v.get("cwd"),
        v.get("version"),
        v.get("forkedFrom"),
    )


def _read_sidecar(path: str) -> tuple[os.stat_result | None, JSONObject | None]:
    """A sidecar's stat and JSON object (None when unreadable); no stat when it vanished."""
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            value = obj(jsoncodec.loads(f.read(HEAD_SIDECAR)))
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError):
        try:
            return os.stat(path), None
        except OSError:
            return None, None
    return st, value


def _named_id(f: _File) -> str:
    """The id a transcript's path gives it (not for a flat sub-agent: its id needs the anchor)."""
    middle = f"/workflows/{f.run}" if f.run is not None else ""
    return f.stem if f.agent is None else f"{f.stem}{middle}/agent-{f.agent}"


def _revision(key: StatKey, lineage: _Lineage) -> str:
    return "claude:" + key_text(key) + lineage.revision


@dataclass(frozen=True, slots=True)
class _Built:
    anchor: _Anchor
    lineage: _Lineage
    cand: Candidate


def _agent_of(name: str) -> str | None:
    if name.startswith("agent-") and name.endswith(".jsonl") and len(name) > 12:
        return name[6:-6]
    return None


class ClaudeBackend(ImportBackend):
    def __init__(self, home: str, uri: str, clock: Clock = time.time_ns) -> None:
        super().__init__(home, uri, clock)
        # per transcript path: what the last listing built from its anchor and lineage
        self._built: dict[str, _Built] = {}

    # -- layout (§1.1) -----------------------------------------------------------------

    def _files(self, token: CancelToken, survey: Survey | None = None) -> list[_File]:
        """The layout walk; with a survey, directories its proofs cover are not listed again."""
        sv = survey or self._proofs.start()
        out: list[_File] = []
        for project in sv.entries(os.path.join(self.home, "projects")):
            token.raise_if_cancelled()
            if not is_dir(project):
                continue
            for entry in sv.entries(project.path):
                name = entry.name
                if name.endswith(".jsonl"):
                    agent = _agent_of(name)
                    if agent is not None:
                        out.append(_File(entry.path, "", agent, flat=True))
                    elif not name.startswith("agent-"):
                        out.append(_File(entry.path, name[:-6]))
                elif is_dir(entry):
                    out.extend(self._nested(sv, entry.path, name))
        return out

    def _nested(self, sv: Survey, session_dir: str, stem: str) -> list[_File]:
        out: list[_File] = []
        sub = os.path.join(session_dir, "subagents")
        for entry in sv.entries(sub):
            agent = _agent_of(entry.name)
            if agent is not None:
                out.append(_File(entry.path, stem, agent))
            elif entry.name == "workflows" and is_dir(entry):
                for run in sv.entries(entry.path):
                    for inner in sv.entries(run.path) if is_dir(run) else ():
                        agent = _agent_of(inner.name)
                        if agent is not None:
                            out.append(_File(inner.path, stem, agent, run.name))
        return out

    # -- sidecars and lineage (§1.2) ---------------------------------------------------

    def _sidecar(self, sv: Survey, path: str) -> tuple[str, JSONObject | None]:
        """A sidecar's revision part and its JSON object (None when absent or unreadable),
        reused only while its stat proves it unchanged (a sidecar may be rewritten in place)."""
        key, value = sv.sidecar(path, _read_sidecar, None)
        return ("-" if key is None else key_text(key[:4])), value

    def _lineage(self, sv: Survey, f: _File, anchor: _Anchor) -> _Lineage:
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
        first = os.path.join(folder, f"agent-{f.agent}.meta.json")
        revision, meta = self._sidecar(sv, first)
        parts, read = [revision], [first]
        parent_agent = nonempty(meta.get("parentAgentId")) if meta is not None else None
        depth, seen, walk = 1, {f.agent}, parent_agent
        while walk is not None and walk not in seen and depth < MAX_SAFE:
            seen.add(walk)
            depth += 1
            path = os.path.join(parents_dir, f"agent-{walk}.meta.json")
            rev, parent_meta = self._sidecar(sv, path)
            parts.append(rev)
            read.append(path)
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
        revisions = "".join(f";meta:{p}" for p in parts)
        return _Lineage(fields, trunk, False, False, revisions, tuple(read))

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

    def candidates(self, token: CancelToken) -> dict[str, Candidate]:
        found: dict[str, Candidate] = {}
        if not self.check_home():
            return found
        sv = self._proofs.start()
        built = self._built
        kept: dict[str, _Built] = {}
        named: dict[str, list[str]] = {}
        volatile: list[str] = []
        deps: dict[str, tuple[str, ...]] = {}
        skipped: list[SkippedArtifact] = []
        for f in self.each(self._files(token, sv), token):
            if f.flat:
                volatile.append(f.path)
            else:
                named.setdefault(_named_id(f), []).append(f.path)
            named_id = os.path.basename(f.path).removesuffix(".jsonl") if f.flat else _named_id(f)
            try:
                st = os.stat(f.path)
                anchor = sv.head(f.path, st, token, _is_anchor, _anchor_of)
            except FileNotFoundError:
                continue
            except OSError as exc:
                log_unreadable(f.path, exc)
                self.skip(skipped, f.path, named_id, None)
                continue
            if anchor is None:
                self.skip(skipped, f.path, named_id, st)
                continue
            # the lineage is read afresh (its sidecars are proven one by one); the header, plan
            # and candidate are rebuilt only when it, the anchor or the transcript's stat moved
            lineage = self._lineage(sv, f, anchor)
            old = built.get(f.path)
            key = stat_key(st)
            if old is not None and old.anchor is anchor and old.lineage == lineage:
                if old.cand.revision != _revision(key, lineage):
                    old = _Built(anchor, lineage, old.cand.moved(_revision(key, lineage), st))
            else:
                sid = self._session_id(f, anchor)
                header = self._header(sid, f, anchor, lineage, None)
                cand = Candidate(
                    sid,
                    f.path,
                    header,
                    _revision(key, lineage),
                    st.st_mtime_ns,
                    _Plan(f, anchor, lineage),
                    lineage.revision,
                )
                old = _Built(anchor, lineage, cand)
            kept[f.path] = old
            deps[f.path] = lineage.sidecars
            pick_winner(found, old.cand)
        token.raise_if_cancelled()
        self._built = kept
        self._skipped = tuple(skipped)
        self._proofs.publish(sv)
        walked = [p for paths in named.values() for p in paths] + volatile
        self._listing = Listing(sv, found, named, volatile, deps, walked)
        return found

    # -- inspect (§3.3) ----------------------------------------------------------------

    def worker_spec(self) -> Init | None:
        return Init(__name__, "ClaudeBackend", self.home, self.uri, {})

    def unlisted(self, session_id: str, token: CancelToken) -> str | None:
        for f in self._files(token):
            if f.flat:
                continue  # its id needs the anchor
            if _named_id(f) == session_id and os.path.exists(f.path):
                return f.path
        return None

    def read(
        self,
        cand: Candidate,
        size: int,
        token: CancelToken,
        builder: MemoBuilder | None,
        payloads: Payloads = None,
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
        lineage = self._lineage(self._proofs.start(), f, anchor)
        em = Emitter(PLUGIN, min(max(anchor.time, 0), MAX_SAFE), payloads=payloads)
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
