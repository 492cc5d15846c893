"""The ``copilot:<home>`` backend (importers.md §9.1–§9.2, §3): session discovery, the main
agent's and each sub-agent's log, headers, workspace titles, revisions."""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial

from ...cancel import CancelToken
from ...model.event import Header
from ..contract.results import Inspection, Payloads, SkippedArtifact
from ..importing.backend import (
    Candidate,
    ImportBackend,
    Listing,
    key_text,
    pick_winner,
    unreadable,
)
from ..importing.emitter import Emitter, JSONObject
from ..importing.lines import Record
from ..importing.survey import Clock, FileKey, Survey, file_key
from ..importing.transcripts import feed, scan_anchor
from ..importing.values import MAX_SAFE, nonempty, obj, parse_time
from ..importing.window import MemoBuilder
from . import workspace
from .layout import Agent, SessionFile, child_id, scan_agents, session_files, session_path
from .mapper import PLUGIN, CopilotMapper

# The workspace.yaml keys that give titles, in rising rank (§9.6).
TITLE_KEYS = ("summary", "name")


Titles = tuple[tuple[str, int, str, str, int | None], ...]  # (file, line, key, title, time)


@dataclass(frozen=True, slots=True)
class _Anchor:
    """What the main agent's header comes from: the first ``session.start`` (§9.2)."""

    session_id: str
    created_at: int
    cwd: object
    version: object
    parent: str | None


@dataclass(frozen=True, slots=True)
class _Plan:
    file: SessionFile
    anchor: _Anchor
    agent: Agent | None  # a sub-agent's log; None for the main agent's
    titles: Titles


def _is_anchor(v: dict[str, object]) -> bool:
    return v.get("type") == "session.start" and obj(v.get("data")) is not None


def _anchor_of(rec: Record) -> _Anchor | None:
    v = rec.value
    d = obj(v.get("data")) or {}
    sid = nonempty(d.get("sessionId"))
    if sid is None:
        return None
    created = parse_time(d.get("startTime"))
    if created is None:
        created = parse_time(v.get("timestamp")) or 0
    context = obj(d.get("context")) or {}
    parent = nonempty(d.get("detachedFromSpawningParentSessionId"))
    return _Anchor(
        sid,
        min(max(created, 0), MAX_SAFE),
        context.get("cwd"),
        d.get("copilotVersion"),
        parent if parent != sid else None,
    )


def _titles(rel: str, scalars: dict[str, workspace.Scalar]) -> Titles:
    updated = scalars.get("updated_at")
    at = parse_time(updated.value) if updated is not None else None
    return tuple(
        (rel, scalars[k].line, k, scalars[k].value, at)
        for k in TITLE_KEYS
        if k in scalars and scalars[k].value
    )


def _revision(key: FileKey, ws: FileKey | None) -> str:
    return f"copilot:{key_text(key[:4])};ws:{key_text(ws[:4] if ws is not None else None)}"


class CopilotBackend(ImportBackend):
    def __init__(self, home: str, uri: str, clock: Clock = time.time_ns) -> None:
        super().__init__(home, uri, clock)
        self._built: dict[str, Candidate] = {}  # per session id: the last listing's candidate

    # -- headers -----------------------------------------------------------------------

    def _header(self, plan: _Plan, session_id: str, approximate: list[str] | None) -> Header:
        anchor, agent = plan.anchor, plan.agent
        created = anchor.created_at
        if agent is not None and agent.time is not None:
            created = min(max(agent.time, 0), MAX_SAFE)
        value: JSONObject = {"version": 0, "id": session_id, "createdAt": created}
        if isinstance(anchor.cwd, str) and anchor.cwd.startswith("/"):
            value["cwd"] = anchor.cwd
        source: JSONObject = {"agent": PLUGIN}
        if isinstance(anchor.version, str):
            source["agentVersion"] = anchor.version
        source["path"] = plan.file.path
        if agent is not None:
            value.update(parentSession=anchor.session_id, origin="subagent", delegationDepth=1)
            if agent.preset is not None:
                value["agentPreset"] = agent.preset
            source["lineage"] = "subagent"
        elif anchor.parent is not None:
            value["parentSession"] = anchor.parent
            source["lineage"] = "resume"
        if approximate:
            source["approximate"] = approximate
        value["source"] = source
        return Header.from_value(value)

    # -- listing (§9.1, §3.1) ----------------------------------------------------------

    def _workspace(self, sv: Survey, f: SessionFile) -> tuple[FileKey | None, Titles]:
        if f.workspace is None:
            return None, ()
        key, scalars = sv.sidecar(f.workspace, workspace.read, {})
        return key, _titles(self.rel(f.workspace), scalars)

    def candidates(self, token: CancelToken) -> dict[str, Candidate]:
        found: dict[str, Candidate] = {}
        if not self.check_home():
            return found
        sv = self._proofs.start()
        built, kept = self._built, dict[str, Candidate]()
        named: dict[str, list[str]] = {}
        walked: list[str] = []
        deps: dict[str, tuple[str, ...]] = {}
        skipped: list[SkippedArtifact] = []
        for f in self.each(session_files(sv, self.home, token), token):
            named.setdefault(f.session_id, []).append(f.path)
            walked.append(f.path)
            head = partial(sv.head, f.path, token=token, is_anchor=_is_anchor, derive=_anchor_of)
            got = self.scanned(skipped, f.path, f.session_id, head)
            if got is None:
                continue
            st, anchor = got
            if anchor.session_id != f.session_id:
                self.skip(skipped, f.path, f.session_id, st)  # as ``inspect`` of the id says
                continue
            ws, titles = self._workspace(sv, f)
            _, agents = sv.sidecar(f.path, lambda p: scan_agents(p, token), ())
            revision = _revision(file_key(st), ws)
            deps[f.path] = (f.workspace,) if f.workspace is not None else ()
            plans = [_Plan(f, anchor, None, titles)]
            plans += [_Plan(f, anchor, a, ()) for a in agents]
            for plan in plans:
                sid = f.session_id if plan.agent is None else child_id(f.session_id, plan.agent.key)
                if plan.agent is not None:
                    named.setdefault(sid, []).append(f.path)
                old = built.get(sid)
                if old is None or old.revision != revision or old.plan != plan:
                    extra = revision[revision.index(";") :]
                    header = self._header(plan, sid, None)
                    old = Candidate(sid, f.path, header, revision, st.st_mtime_ns, plan, extra)
                kept[sid] = old
                pick_winner(found, old)
        token.raise_if_cancelled()
        self._built = kept
        self._skipped = tuple(a for a in skipped if a.session_id not in found)  # else it reads
        self._proofs.publish(sv)
        self._listing = Listing(sv, found, named, [], deps, walked)
        return found

    def unlisted(self, session_id: str, token: CancelToken) -> str | None:
        return session_path(self.home, session_id)

    # -- inspect (§3.3) ----------------------------------------------------------------

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
            raise unreadable(self.rel(cand.path), "it has no session.start")
        # §3.3: the header comes from this read's own scan (a replaced file shows as a mismatch)
        rec = scan_anchor(cand.path, size, token, _is_anchor)
        anchor = _anchor_of(rec) if rec is not None else None
        if anchor is None:
            raise unreadable(self.rel(cand.path), "it has no session.start naming a session")
        if anchor.session_id != plan.file.session_id:
            raise unreadable(
                self.rel(cand.path),
                f'its session.start names another id than "{plan.file.session_id}"',
            )
        em = Emitter(PLUGIN, anchor.created_at, payloads=payloads)
        key = plan.agent.key if plan.agent is not None else None
        mapper = CopilotMapper(em, key)
        em.sink = builder.emitted if builder is not None else None
        feed(cand.path, size, token, mapper.feed, builder)
        mapper.finish(list(plan.titles))  # the listing's: its revision names that workspace.yaml
        agent = plan.agent
        if key is not None:
            if not mapper.seen:
                raise unreadable(self.rel(cand.path), f'it holds no record of agent "{key}"')
            agent = Agent(key, mapper.first_time, mapper.preset)
        reasons = list(em.reasons)
        if (
            not (isinstance(anchor.cwd, str) and anchor.cwd.startswith("/"))
            and anchor.cwd is not None
        ):
            reasons.insert(0, "cwd-not-absolute")
        header = self._header(_Plan(plan.file, anchor, agent, ()), cand.session_id, reasons)
        return Inspection(header, em.events)
