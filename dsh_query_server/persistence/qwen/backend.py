"""The ``qwen:<home>`` backend (importers.md §10.1–§10.2, §3): discovery, headers, lineage from
sidecars, revisions."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from functools import partial

from ... import jsoncodec
from ...cancel import CancelToken
from ...model.event import Header
from ..contract.results import Inspection, Payloads, SkippedArtifact
from ..importing.backend import (
    Candidate,
    ImportBackend,
    Listing,
    key_text,
    pick_winner,
    stat_key,
    unreadable,
)
from ..importing.emitter import Emitter, JSONObject
from ..importing.lines import Record
from ..importing.survey import Clock, Survey
from ..importing.transcripts import feed, scan_anchor
from ..importing.values import MAX_SAFE, nonempty, obj, parse_time
from ..importing.window import MemoBuilder
from .layout import QwenFile, chat_files, sidecar_path
from .mapper import PLUGIN, QwenMapper

SIDECAR_LIMIT = 1_048_576


@dataclass(frozen=True, slots=True)
class _Anchor:
    session_id: str  # the records' sessionId
    time: int
    cwd: object
    version: object
    forked_from: str | None  # /branch: the session this one was copied from
    parent_session: str | None  # a parent_session record: the session that spawned this one


@dataclass(frozen=True, slots=True)
class _Lineage:
    fields: JSONObject  # header fields, plus "lineage" for the source
    revision: str  # the sidecars' part of the revision
    sidecars: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class _Plan:
    file: QwenFile
    anchor: _Anchor
    lineage: _Lineage


def _is_anchor(v: dict[str, object]) -> bool:
    return isinstance(v.get("sessionId"), str) and parse_time(v.get("timestamp")) is not None


def _anchor_of(rec: Record) -> _Anchor:
    v = rec.value
    forked = obj(v.get("forkedFrom"))
    payload = obj(v.get("systemPayload"))
    spawned = None
    if v.get("type") == "system" and v.get("subtype") == "parent_session" and payload is not None:
        spawned = nonempty(payload.get("parentSessionId"))
    return _Anchor(
        str(v["sessionId"]),
        parse_time(v.get("timestamp")) or 0,
        v.get("cwd"),
        v.get("version"),
        nonempty(forked.get("sessionId")) if forked is not None else None,
        spawned,
    )


def _read_sidecar(path: str) -> tuple[os.stat_result | None, JSONObject | None]:
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            value = obj(jsoncodec.loads(f.read(SIDECAR_LIMIT)))
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError):
        try:
            return os.stat(path), None
        except OSError:
            return None, None
    return st, value


def _revision(st: os.stat_result, lineage: _Lineage) -> str:
    return "qwen:" + key_text(stat_key(st)) + lineage.revision


class QwenBackend(ImportBackend):
    def __init__(
        self, home: str, uri: str, *, include_archived: bool = True, clock: Clock = time.time_ns
    ) -> None:
        super().__init__(home, uri, clock)
        self.include_archived = include_archived
        # per transcript: the candidate the last listing built (reused while nothing moved)
        self._built: dict[str, tuple[_Anchor, _Lineage, Candidate]] = {}

    # -- lineage (§10.2) ---------------------------------------------------------------

    def _sidecar(self, sv: Survey, path: str) -> tuple[str, JSONObject | None]:
        key, value = sv.sidecar(path, _read_sidecar, None)
        return ("-" if key is None else key_text(key[:4])), value

    def _lineage(self, sv: Survey, f: QwenFile, anchor: _Anchor) -> _Lineage:
        if f.agent is None:
            fields: JSONObject = {}
            if anchor.forked_from is not None and anchor.forked_from != f.stem:
                fields = {"parentSession": anchor.forked_from, "lineage": "fork"}
            elif anchor.parent_session is not None and anchor.parent_session != f.stem:
                fields = {"parentSession": anchor.parent_session, "lineage": "subagent"}
            return _Lineage(fields, "")
        first = sidecar_path(f, f.agent)
        revision, meta = self._sidecar(sv, first)
        parts, read = [revision], [first]
        parent = nonempty(meta.get("parentAgentId")) if meta is not None else None
        depth, seen, walk = 1, {f.agent}, parent
        while walk is not None and walk not in seen and depth < MAX_SAFE:
            seen.add(walk)
            depth += 1
            path = sidecar_path(f, walk)
            rev, walked = self._sidecar(sv, path)
            parts.append(rev)
            read.append(path)
            walk = nonempty(walked.get("parentAgentId")) if walked is not None else None
        fields = {
            "parentSession": f"{f.stem}/agent-{parent}" if parent else f.stem,
            "origin": "subagent",
            "delegationDepth": depth,
            "lineage": "subagent",
        }
        preset = meta.get("agentType") if meta is not None else None
        if isinstance(preset, str):
            fields["agentPreset"] = preset
        return _Lineage(fields, "".join(f";meta:{p}" for p in parts), tuple(read))

    # -- headers -----------------------------------------------------------------------

    def _header(
        self, f: QwenFile, anchor: _Anchor, lineage: _Lineage, approximate: list[str] | None
    ) -> Header:
        sid = f.session_id
        value: JSONObject = {
            "version": 0,
            "id": sid,
            "createdAt": min(max(anchor.time, 0), MAX_SAFE),
        }
        if isinstance(anchor.cwd, str) and anchor.cwd.startswith("/"):
            value["cwd"] = anchor.cwd
        fields = dict(lineage.fields)
        kind = fields.pop("lineage", None)
        if fields.get("parentSession") == sid:
            del fields["parentSession"]
        value.update(fields)
        source: JSONObject = {"agent": PLUGIN}
        if isinstance(anchor.version, str) and anchor.version:
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
        named: dict[str, list[str]] = {}
        deps: dict[str, tuple[str, ...]] = {}
        ranks: dict[str, int] = {}
        built, kept = self._built, dict[str, tuple[_Anchor, _Lineage, Candidate]]()
        skipped: list[SkippedArtifact] = []
        for f in self.each(chat_files(sv, self.home, self.include_archived), token):
            named.setdefault(f.session_id, []).append(f.path)
            head = partial(sv.head, f.path, token=token, is_anchor=_is_anchor, derive=_anchor_of)
            got = self.scanned(skipped, f.path, f.session_id, head)
            if got is None:
                continue
            st, anchor = got
            if f.agent is None and anchor.session_id.lower() != f.stem.lower():
                # §10.2: a chat must name its own session; ``inspect`` of the id says as here
                self.skip(skipped, f.path, f.session_id, st)
                continue
            lineage = self._lineage(sv, f, anchor)
            revision = _revision(st, lineage)
            old = built.get(f.path)
            if old is not None and old[0] is anchor and old[1] == lineage:
                cand = old[2] if old[2].revision == revision else old[2].moved(revision, st)
            else:
                header = self._header(f, anchor, lineage, None)
                plan = _Plan(f, anchor, lineage)
                cand = Candidate(
                    f.session_id, f.path, header, revision, st.st_mtime_ns, plan, lineage.revision
                )
            kept[f.path] = (anchor, lineage, cand)
            deps[f.path] = lineage.sidecars
            ranks[f.path] = f.rank
            pick_winner(found, cand, lambda c: ranks[c.path])
        token.raise_if_cancelled()
        self._built = kept
        self._skipped = tuple(a for a in skipped if a.session_id not in found)  # else it reads
        self._proofs.publish(sv)
        walked = [p for paths in named.values() for p in paths]
        self._listing = Listing(sv, found, named, [], deps, walked)
        return found

    def unlisted(self, session_id: str, token: CancelToken) -> str | None:
        for f in chat_files(self._proofs.start(), self.home, self.include_archived):
            if f.session_id == session_id and os.path.exists(f.path):
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
        rec = scan_anchor(cand.path, size, token, _is_anchor)
        if rec is None:
            raise unreadable(self.rel(cand.path), "no record names a session and a time")
        anchor = _anchor_of(rec)
        f = plan.file
        lineage = self._lineage(self._proofs.start(), f, anchor)
        em = Emitter(PLUGIN, min(max(anchor.time, 0), MAX_SAFE), payloads=payloads)
        copied = f.agent is None and anchor.forked_from not in (None, f.stem)
        mapper = QwenMapper(em, copied)
        em.sink = builder.emitted if builder is not None else None
        feed(cand.path, size, token, mapper.feed, builder)
        mapper.finish()
        reasons = list(em.reasons)
        cwd = anchor.cwd
        if cwd is not None and not (isinstance(cwd, str) and cwd.startswith("/")):
            reasons.insert(0, "cwd-not-absolute")
        return Inspection(self._header(f, anchor, lineage, reasons), em.events)
