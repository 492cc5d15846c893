"""The ``codex:<home>`` backend (importers.md §2.1–§2.2, §3): rollout discovery, headers, the
session index's titles, revisions."""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass
from functools import partial

from ... import jsoncodec
from ...cancel import NULL_TOKEN, CancelToken
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
from ..importing.survey import DIR, FILE, SAFE_AGE_NS, Clock, FileKey, Survey, file_key
from ..importing.transcripts import feed, open_items, scan_anchor
from ..importing.values import MAX_SAFE, nonempty, obj, parse_time, trailing_uuid
from ..importing.window import MemoBuilder
from ..importing.worker import Init
from .mapper import PLUGIN, CodexMapper

INDEX = "session_index.jsonl"


@dataclass(frozen=True, slots=True)
class _Anchor:
    session_id: str
    created_at: int
    fields: JSONObject  # header fields beyond version/id/createdAt
    source: JSONObject  # agentVersion / lineage of the header's source
    bare: bool
    forked: bool


@dataclass(frozen=True, slots=True)
class _Plan:
    anchor: _Anchor
    title: tuple[int, str, JSONObject, int | None] | None


def _is_anchor(v: dict[str, object]) -> bool:
    if v.get("type") == "session_meta":
        return obj(v.get("payload")) is not None
    return "type" not in v and isinstance(v.get("id"), str) and "instructions" in v


def _anchor_of(v: JSONObject, file_id: str) -> _Anchor | None:
    bare = v.get("type") != "session_meta"
    p = v if bare else obj(v.get("payload")) or {}
    if p.get("id") != file_id:
        return None
    created = parse_time(p.get("timestamp"))
    if created is None:
        created = parse_time(v.get("timestamp")) or 0
    fields: JSONObject = {}
    source: JSONObject = {}
    if isinstance(p.get("cli_version"), str):
        source["agentVersion"] = p["cli_version"]
    cwd = p.get("cwd")
    if isinstance(cwd, str) and cwd.startswith("/"):
        fields["cwd"] = cwd
    forked = nonempty(p.get("forked_from_id"))
    if forked is not None and forked != file_id:
        fields["parentSession"] = forked
        source["lineage"] = "fork"
    native = obj(p.get("source"))
    if native is not None and "subagent" in native:
        fields["origin"] = "subagent"
        sub = native["subagent"]
        spawn = obj(obj(sub).get("thread_spawn")) if obj(sub) is not None else None  # type: ignore[union-attr]
        source["lineage"] = "compaction" if sub == "compact" else "subagent"
        if spawn is not None:
            parent = nonempty(spawn.get("parent_thread_id"))
            if parent is not None and parent != file_id:
                fields["parentSession"] = parent
            depth = spawn.get("depth")
            ok = type(depth) is int and 0 <= depth <= MAX_SAFE
            fields["delegationDepth"] = depth if ok else 1
            if isinstance(spawn.get("agent_role"), str):
                fields["agentPreset"] = spawn["agent_role"]
    cwd_dropped = isinstance(cwd, str) and not cwd.startswith("/")
    if cwd_dropped:
        source["cwdDropped"] = True
    return _Anchor(
        file_id, min(max(created, 0), MAX_SAFE), fields, source, bare, forked is not None
    )


def _rollout_id(name: str) -> str | None:
    if not name.startswith("rollout-"):
        return None
    stem = (
        name[:-6]
        if name.endswith(".jsonl")
        else name[:-10]
        if name.endswith(".jsonl.zst")
        else None
    )
    return trailing_uuid(stem) if stem is not None else None


def _derive(sid: str, rec: Record) -> _Anchor | None:
    return _anchor_of(rec.value, sid)


def _same(plan: object, anchor: _Anchor) -> bool:
    return isinstance(plan, _Plan) and plan.anchor is anchor


def _revision(st: os.stat_result, entry: tuple[int, JSONObject, str] | None) -> str:
    return f"codex:{key_text(stat_key(st))};title:{entry[2] if entry is not None else '-'}"


class CodexBackend(ImportBackend):
    def __init__(
        self, home: str, uri: str, *, include_archived: bool = True, clock: Clock = time.time_ns
    ) -> None:
        super().__init__(home, uri, clock)
        self.include_archived = include_archived
        self._clock = clock
        self._index: tuple[FileKey, dict[str, tuple[int, JSONObject, str]]] | None = None
        self._built: dict[str, Candidate] = {}  # per rollout path: the last listing's candidate

    def worker_spec(self) -> Init | None:
        return Init(
            __name__,
            "CodexBackend",
            self.home,
            self.uri,
            {"include_archived": self.include_archived},
        )

    def _files(self, token: CancelToken, sv: Survey | None = None) -> list[tuple[str, str, int]]:
        """(path, id, rank) per candidate: rank 0 under sessions/, 1 archived (§2.1). Walks as
        ``os.walk`` does (links to directories are not followed, unreadable ones are skipped);
        with a survey, directories its proofs cover are not listed again."""
        sv = sv or self._proofs.start()
        out: list[tuple[str, str, int]] = []
        roots = [(os.path.join(self.home, "sessions"), 0, True)]
        if self.include_archived:
            roots.append((os.path.join(self.home, "archived_sessions"), 1, False))
        for root, rank, deep in roots:
            stack = [root]
            while stack:
                folder = stack.pop()
                token.raise_if_cancelled()
                names: list[str] = []
                subdirs: list[str] = []
                for entry in sv.entries(folder, strict=False):
                    if entry.kind == DIR:
                        subdirs.append(entry.path)
                    elif entry.kind == FILE or not os.path.isdir(entry.path):
                        names.append(entry.name)
                if deep:
                    stack.extend(reversed(subdirs))
                plain = {n for n in names if n.endswith(".jsonl")}
                for name in sorted(names):
                    sid = _rollout_id(name)
                    if sid is None or (name.endswith(".zst") and name[:-4] in plain):
                        continue
                    out.append((os.path.join(folder, name), sid, rank))
        return out

    def _titles(self, sv: Survey) -> dict[str, tuple[int, JSONObject, str]]:
        """The last index entry per id with its line (the index enters revisions by content,
        §3.2), read again whenever its stat does not prove it unchanged."""
        path = os.path.join(self.home, INDEX)
        try:
            st = os.stat(path)
        except FileNotFoundError:
            sv.files[path] = None
            return {}
        except OSError:
            sv.young = True
            return {}
        key, safe_before = file_key(st), self._clock() - SAFE_AGE_NS
        known = self._index
        if known is not None and known[0] == key:
            sv.files[path] = key
            return known[1]
        sv.reads += 1
        entries: dict[str, tuple[int, JSONObject, str]] = {}
        try:
            for item in open_items(path, st.st_size, NULL_TOKEN):
                if isinstance(item, Record) and isinstance(item.value.get("id"), str):
                    digest = hashlib.sha256(jsoncodec.dumps(item.value)).hexdigest()[:16]
                    entries[str(item.value["id"])] = (item.line, item.value, digest)
        except OSError:
            sv.young = True
            return {}
        self._index = (key, entries) if key[3] < safe_before else None
        if self._index is not None:
            sv.files[path] = key
        else:
            sv.young = True
        return entries

    def _header(self, anchor: _Anchor, path: str, approximate: list[str] | None) -> Header:
        value: JSONObject = {"version": 0, "id": anchor.session_id, "createdAt": anchor.created_at}
        value.update(anchor.fields)
        source: JSONObject = {"agent": PLUGIN}
        if "agentVersion" in anchor.source:
            source["agentVersion"] = anchor.source["agentVersion"]
        source["path"] = path
        if "lineage" in anchor.source:
            source["lineage"] = anchor.source["lineage"]
        if approximate:
            source["approximate"] = approximate
        value["source"] = source
        return Header.from_value(value)

    def candidates(self, token: CancelToken) -> dict[str, Candidate]:
        found: dict[str, Candidate] = {}
        if not self.check_home():
            return found
        sv = self._proofs.start()
        titles = self._titles(sv)
        ranks: dict[str, int] = {}
        built, kept = self._built, dict[str, Candidate]()
        named: dict[str, list[str]] = {}
        index = (os.path.join(self.home, INDEX),)
        skipped: list[SkippedArtifact] = []
        for path, sid, rank in self.each(self._files(token, sv), token):
            named.setdefault(sid, []).append(path)
            derive = partial(_derive, sid)
            head = partial(sv.head, path, token=token, is_anchor=_is_anchor, derive=derive)
            got = self.scanned(skipped, path, sid, head)
            if got is None:
                continue
            st, anchor = got
            entry = titles.get(sid)
            revision = _revision(st, entry)
            cand = built.get(path)
            plan = cand.plan if cand is not None else None
            if cand is None or cand.revision != revision or not _same(plan, anchor):
                cand = self._candidate(sid, path, st, anchor, entry, revision)
            kept[path] = cand
            ranks[path] = rank
            pick_winner(found, cand, lambda c: ranks[c.path])
        token.raise_if_cancelled()
        self._built = kept
        self._skipped = tuple(skipped)
        self._proofs.publish(sv)
        walked = [p for paths in named.values() for p in paths]
        self._listing = Listing(sv, found, named, [], dict.fromkeys(kept, index), walked)
        return found

    def _candidate(
        self,
        sid: str,
        path: str,
        st: os.stat_result,
        anchor: _Anchor,
        entry: tuple[int, JSONObject, str] | None,
        revision: str,
    ) -> Candidate:
        digest = entry[2] if entry is not None else "-"
        title = None
        if entry is not None and isinstance(entry[1].get("thread_name"), str):
            name = str(entry[1]["thread_name"])
            title = (entry[0], name, entry[1], parse_time(entry[1].get("updated_at")))
        header = self._header(anchor, path, None)
        plan = _Plan(anchor, title)
        return Candidate(sid, path, header, revision, st.st_mtime_ns, plan, f";title:{digest}")

    def unlisted(self, session_id: str, token: CancelToken) -> str | None:
        for path, sid, _ in self._files(token):
            if sid == session_id and os.path.exists(path):
                return path
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
            raise unreadable(self.rel(cand.path), "the transcript has no session_meta")
        # §3.3: the header comes from this read's own scan (a replaced file shows as a mismatch)
        rec = scan_anchor(cand.path, size, token, _is_anchor)
        if rec is None:
            raise unreadable(self.rel(cand.path), "it has no session_meta")
        anchor = _anchor_of(rec.value, cand.session_id)
        if anchor is None:
            raise unreadable(
                self.rel(cand.path),
                f'its first session_meta names another id than "{cand.session_id}"',
            )
        em = Emitter(PLUGIN, anchor.created_at, payloads=payloads)
        mapper = CodexMapper(em, anchor.session_id, anchor.forked, anchor.bare)
        em.sink = builder.emitted if builder is not None else None
        feed(cand.path, size, token, mapper.feed, builder)
        mapper.finish(plan.title)
        reasons = list(em.reasons)
        if anchor.source.get("cwdDropped"):
            reasons.insert(0, "cwd-not-absolute")
        return Inspection(self._header(anchor, cand.path, reasons), em.events)
