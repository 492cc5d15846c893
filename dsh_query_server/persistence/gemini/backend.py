"""The ``gemini:<home>`` backend (importers.md §7.1–§7.2, §3): discovery, headers, revisions,
and reading both session formats."""

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
    ATTEMPTS,
    Candidate,
    ImportBackend,
    ImportError_,
    Listing,
    key_text,
    pick_winner,
    stat_key,
    unreadable,
)
from ..importing.emitter import JSONObject
from ..importing.survey import Clock, Survey
from ..importing.transcripts import feed, scan_anchor
from ..importing.window import MemoBuilder
from .layout import (
    Anchor,
    Root,
    SessionFile,
    derive,
    document_anchor,
    is_anchor,
    names,
    project_root,
    read_document,
    walk,
)
from .mapper import GeminiMapper
from .parts import PLUGIN
from .surface import GeminiEmitter


@dataclass(frozen=True, slots=True)
class _Plan:
    file: SessionFile
    anchor: Anchor
    root: Root


def _revision(st: os.stat_result, root: Root) -> str:
    return "gemini:" + key_text(stat_key(st)) + root.revision


def _rank(c: Candidate) -> int:
    """A ``.jsonl`` beats the ``.json`` it was migrated from (Gemini CLI writes the JSONL beside
    it when it resumes one)."""
    return 1 if c.path.endswith(".json") else 0


class GeminiBackend(ImportBackend):
    def __init__(self, home: str, uri: str, clock: Clock = time.time_ns) -> None:
        super().__init__(home, uri, clock)
        self._built: dict[str, Candidate] = {}  # per session file: the last listing's candidate

    # -- headers -----------------------------------------------------------------------

    def _header(
        self, f: SessionFile, anchor: Anchor, root: Root, approximate: list[str] | None
    ) -> Header:
        value: JSONObject = {"version": 0, "id": anchor.session_id, "createdAt": anchor.created_at}
        if root.cwd is not None:
            value["cwd"] = root.cwd
        sub = f.parent is not None or anchor.subagent
        if f.parent is not None and f.parent != anchor.session_id:
            value["parentSession"] = f.parent
        if sub:
            value["origin"] = "subagent"
            value["delegationDepth"] = 1
        source: JSONObject = {"agent": PLUGIN, "path": f.path}
        if sub:
            source["lineage"] = "subagent"
        if approximate:
            source["approximate"] = approximate
        value["source"] = source
        return Header.from_value(value)

    def _anchor(
        self, sv: Survey, f: SessionFile, st: os.stat_result, token: CancelToken
    ) -> Anchor | None:
        if f.document:
            return sv.sidecar(f.path, read_document, None)[1]
        return sv.head(f.path, st, token, is_anchor, derive)

    # -- listing (§3.1) ----------------------------------------------------------------

    def candidates(self, token: CancelToken) -> dict[str, Candidate]:
        found: dict[str, Candidate] = {}
        if not self.check_home():
            return found
        sv = self._proofs.start()
        files = walk(sv, self.home, token)
        roots: dict[tuple[str, str | None], Root] = {}
        kept: dict[str, Candidate] = {}
        deps: dict[str, tuple[str, ...]] = {}
        skipped: list[SkippedArtifact] = []
        for f in self.each(files, token):
            # named by what its file name says of the id (``unlisted``)
            got = self.scanned(skipped, f.path, f.named, partial(self._anchor, sv, f, token=token))
            if got is None:
                continue
            st, anchor = got
            where = (f.project, anchor.project_hash)
            root = roots.get(where)
            if root is None:
                root = roots[where] = project_root(sv, self.home, f.project, anchor.project_hash)
            revision = _revision(st, root)
            cand = self._built.get(f.path)
            plan = cand.plan if cand is not None else None
            if (
                cand is None
                or not isinstance(plan, _Plan)
                or plan.anchor != anchor
                or plan.root != root
            ):
                header = self._header(f, anchor, root, None)
                plan = _Plan(f, anchor, root)
                cand = Candidate(
                    anchor.session_id, f.path, header, revision, st.st_mtime_ns, plan, root.revision
                )
            elif cand.revision != revision:
                cand = cand.moved(revision, st)
            kept[f.path] = cand
            deps[f.path] = root.files
            pick_winner(found, cand, _rank)
        token.raise_if_cancelled()
        self._built = kept
        self._proofs.publish(sv)
        named: dict[str, list[str]] = {}
        by_name: dict[tuple[str, bool], list[str]] = {}
        for f in files:
            by_name.setdefault((f.named, f.parent is not None), []).append(f.path)
        for sid, cand in found.items():
            paths = by_name.get((names(sid, False), False), []) + by_name.get(
                (names(sid, True), True), []
            )
            named[sid] = sorted({*paths, cand.path})
        # a file whose name gives a listed id is no session left out: that id reads
        listed = {p for paths in named.values() for p in paths}
        self._skipped = tuple(a for a in skipped if a.path not in listed)
        walked = [f.path for f in files]
        self._listing = Listing(sv, found, named, [], deps, walked)
        return found

    def unlisted(self, session_id: str, token: CancelToken) -> str | None:
        """A session file whose name gives ``session_id`` (a sub-agent's, or a main session's
        eight characters) but that has no session record."""
        sv = self._proofs.start()
        for f in walk(sv, self.home, token):
            if f.named != names(session_id, f.parent is not None) or not os.path.exists(f.path):
                continue
            try:
                st = os.stat(f.path)
                if self._anchor(sv, f, st, token) is None:
                    return f.path
            except OSError:
                continue
        return None

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
            raise unreadable(self.rel(cand.path), "it has no session record")
        f = plan.file
        em: GeminiEmitter
        if f.document:
            doc = self._document(cand.path)
            anchor = document_anchor(doc)
            if anchor is None:
                raise unreadable(self.rel(cand.path), "it is no JSON session document")
            self._same_id(cand, anchor)
            em = GeminiEmitter(PLUGIN, anchor.created_at, payloads=payloads)
            mapper = GeminiMapper(em)
            if builder is not None:
                builder.end()  # no event of a document comes from a line
                em.sink = builder.emitted
            mapper.document(doc)  # type: ignore[arg-type]
        else:
            # the header comes from this read's own scan: a replaced file shows as a mismatch
            rec = scan_anchor(cand.path, size, token, is_anchor)
            if rec is None:
                raise unreadable(self.rel(cand.path), "no record names a session and a project")
            anchor = derive(rec)
            self._same_id(cand, anchor)
            em = GeminiEmitter(PLUGIN, anchor.created_at, payloads=payloads)
            mapper = GeminiMapper(em)
            em.sink = builder.emitted if builder is not None else None
            feed(cand.path, size, token, mapper.feed, builder)
        mapper.finish()
        root = project_root(self._proofs.start(), self.home, f.project, anchor.project_hash)
        reasons = list(em.reasons)
        if root.cwd is None:
            reasons.insert(0, "cwd-unknown")
        return Inspection(self._header(f, anchor, root, reasons), em.events)

    def _same_id(self, cand: Candidate, anchor: Anchor) -> None:
        if anchor.session_id != cand.session_id:
            raise unreadable(
                self.rel(cand.path), f'its session record names another id than "{cand.session_id}"'
            )

    def _document(self, path: str) -> object:
        """A ``.json`` session, read whole: Gemini CLI rewrote it in place on every change, so
        a read is kept only when the file's stat did not move while it was read."""
        for _ in range(ATTEMPTS):
            with open(path, "rb") as stream:
                before = os.fstat(stream.fileno())
                data = stream.read()
            after = os.stat(path)
            if stat_key(before) != stat_key(after) or len(data) != before.st_size:
                continue
            try:
                return jsoncodec.loads(data)
            except (ValueError, RecursionError):  # not JSON, or nested past the parser
                raise unreadable(self.rel(path), "it is not valid JSON") from None
        raise ImportError_("transcript changed while being read")
