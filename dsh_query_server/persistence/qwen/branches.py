"""The model's context per record of a Qwen Code ``parentUuid`` tree (importers.md §10.4).

Qwen Code rebuilds what the model sees by walking ``parentUuid`` back from the last record and
replaying that chain; a rewind re-roots the chain, so the records after the rewind point sit on an
abandoned branch. Here every record keeps the context after it as a persistent list of surface
seqs (a shared-tail linked list: one node per surface event, O(1) per record). Moving to another
record's context shadows what it lacks (a replace owed by the next surface event) and re-appends,
as copies, what it has that is no longer current (a branch from before a compaction).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..importing.emitter import Emitter, JSONObject
from ..importing.values import obj


@dataclass(frozen=True, slots=True)
class Node:
    """The last surface seq of a context, the node before it, and the context's length."""

    seq: int
    prev: Node | None
    length: int


def push(node: Node | None, seq: int) -> Node:
    return Node(seq, node, 1 if node is None else node.length + 1)


def seqs(node: Node | None) -> list[int]:
    out: list[int] = []
    while node is not None:
        out.append(node.seq)
        node = node.prev
    out.reverse()
    return out


def prefix(node: Node | None, k: int) -> Node | None:
    """The node of the context's first ``k`` seqs."""
    while node is not None and node.length > k:
        node = node.prev
    return node


@dataclass(slots=True)
class Surface:
    """The emitter's surface seen as a context: ``cur`` is what the mirror holds once a pending
    replace (``em.pending``, always a suffix of the mirror) is taken."""

    em: Emitter
    cur: Node | None = None

    def emit(
        self,
        etype: str,
        data: JSONObject,
        tag: str,
        *,
        span: list[int] | None = None,
        markers: list[int] | None = None,
        extra_src: list[int] | None = None,
    ) -> int:
        """A surface event, appended to the context (a replaced span is never part of it: it is
        a pending suffix, or the whole surface a compaction emptied the context of)."""
        seq = self.em.emit_surface(
            etype, data, tag, span=span, markers=markers, extra_src=extra_src
        )
        self.cur = push(self.cur, seq)
        return seq

    def placeholder(self, span: list[int] | None = None, markers: list[int] | None = None) -> int:
        seq = self.em.placeholder(span, markers)
        self.cur = push(self.cur, seq)
        return seq

    def before_result(self) -> None:
        """A tool result cannot take a pending replace (importers.md §0.5): a placeholder does."""
        if self.em.pending is not None:
            self.placeholder()

    def result(self, seq: int) -> None:
        """Note a tool result the emitter appended."""
        self.cur = push(self.cur, seq)

    # -- moving between branches ----------------------------------------------------------

    def retarget(self, target: Node | None, markers: list[int]) -> None:
        """Make ``target`` the context: what it lacks is shadowed by the next surface event (a
        placeholder at end of file); what it has beyond the common prefix is re-appended as
        copies, the first replacing everything after that prefix."""
        if target is self.cur:
            return
        want, have = seqs(target), seqs(self.cur)
        k = 0
        for a, b in zip(want, have, strict=False):
            if a != b:
                break
            k += 1
        em = self.em
        owed, owed_markers = em.pending if em.pending is not None else ([], [])
        span = have[k:] + owed
        if k == len(want):
            self.cur = target
            if span:
                em.pending = (span, owed_markers + markers)
            return
        em.pending = None
        self.cur = prefix(target, k)
        first: tuple[list[int], list[int]] | None = (span, owed_markers + markers)
        for original in want[k:]:
            self.copy(original, first)
            first = None

    def copy(self, original: int, replace: tuple[list[int], list[int]] | None) -> int:
        """Re-append an earlier surface event (importers.md §0.5 Copy), id ``<id>#copy``; with
        ``replace``, the copy replaces that span (a tool result lets a placeholder do it)."""
        event = self.em.events[original]
        etype = str(event.type)
        data = obj(self.em.data_of(original)) or {}
        data.pop("import", None)
        message = data if etype == "user/message" else obj(data.get("message"))
        if message is not None:
            message["id"] = f"{message.get('id')}#copy"
        span, markers = replace if replace is not None else ([], [])
        if etype == "tool/result" and span:
            self.placeholder(span, markers)
            span, markers = [], []
        return self.emit(
            etype, data, "copy", span=span or None, markers=markers or None, extra_src=[original]
        )
