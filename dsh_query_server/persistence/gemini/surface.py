"""Keeping the imported surface equal to the units of Gemini CLI's message list (importers.md
§7.4): whatever rewrote the list, the events emitted for the change are the smallest edit the
fold allows between the old units and the new ones.

The old and new slot sequences share a prefix and a suffix; between them the old middle ``Mo``
(plus a pending span, §0.5) and the new middle ``Mn`` are:

- ``Mo`` empty: ``Mn`` appends;
- ``Mn`` empty: ``Mo`` becomes pending, replaced by the next surface event (a placeholder at end
  of file);
- one new slot: it replaces ``Mo`` in place (a tool result only as a rewrite of one tool result
  that differs in content alone, semantics.md §2.1 step 4.6);
- otherwise: the first new slot replaces ``Mo`` and the old suffix, and the suffix is re-emitted
  after ``Mn`` as copies of its events.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..importing.emitter import Emitter, JSONObject
from ..importing.values import json_equal, obj
from .units import Slot


@dataclass(slots=True)
class GeminiEmitter(Emitter):
    """The shared emitter plus the one replace it refuses (a tool result rewriting one), and
    the provenance of a ``.json`` session's messages (``import.message``, their index)."""

    message: int | None = None

    def provenance(self, synthetic: bool = False, *, eof: bool = False) -> JSONObject:
        out = Emitter.provenance(self, synthetic, eof=eof)
        if not eof and self.message is not None:
            out["message"] = self.message
        return out

    def rewrite(self, old: int, data: JSONObject, markers: list[int]) -> int:
        """A ``tool/result`` replacing the current ``tool/result`` ``old``; ``data`` keeps every
        key of the old event's data, ``import`` included, and only the result content differs."""
        value: JSONObject = {
            "type": "tool/result",
            "data": data,
            "surfaceOp": {"op": "replace", "start": old, "end": old},
            "sourceEventSeqs": [old, *sorted(m for m in markers if m != old)],
        }
        seq = self._put(value, self.time)
        self.nodes[self.nodes.index(old)] = seq
        self.shadowed.add(old)
        del self.kinds[old]
        self.kinds[seq] = "tool"
        return seq


@dataclass(frozen=True, slots=True)
class Item:
    """One slot of a message list: a fresh ``slot`` (to emit), or ``seq``, the event that
    already stands for it (kept in place, or copied when it must move)."""

    mid: str
    k: int
    digest: bytes
    slot: Slot | None
    seq: int = -1

    @property
    def key(self) -> tuple[str, int, bytes]:
        return (self.mid, self.k, self.digest)


Emit = Callable[[Item, list[int], list[int]], int]  # item, span, markers -> seq


def _stripped(data: JSONObject) -> JSONObject:
    """A tool result's data with its result content nulled (the rewrite comparison)."""
    message = obj(data.get("message")) or {}
    block = dict(obj((message.get("content") or [None])[0]) or {})  # type: ignore[index]
    block["content"] = None
    return {**data, "message": {**message, "content": [block]}}


@dataclass(slots=True)
class Diff:
    """Applies one change of the list: ``old`` and ``new`` are the slots from the first message
    that may have changed to the end; ``pending`` is the span still owed a replace."""

    em: GeminiEmitter
    emit: Emit
    marker: Callable[[], int | None]  # the record's marker, emitted when old events go
    markers: list[int]
    placeholder: int | None = None  # a placeholder emitted before new[placed], when one was
    placed: int = 0

    def apply(
        self, old: list[Item], new: list[Item], pending: tuple[list[int], list[int]] | None
    ) -> tuple[list[int], tuple[list[int], list[int]] | None]:
        """The seqs of ``new`` (kept or emitted) and the pending span left afterwards; a
        placeholder the edit needed is ``placeholder``, standing before ``new[placed]``."""
        n_old, n_new = len(old), len(new)
        i = 0
        while i < n_old and i < n_new and old[i].key == new[i].key:
            i += 1
        j = 0
        if pending is None:
            while j < n_old - i and j < n_new - i and old[-1 - j].key == new[-1 - j].key:
                j += 1
        seqs = [o.seq for o in old[:i]]
        mo = [o.seq for o in old[i : n_old - j]]
        suffix = old[n_old - j :]
        mn = new[i : n_new - j]
        span_p, markers_p = pending if pending is not None else ([], [])
        markers = [*self.markers, *markers_p]
        if not mo and not span_p:
            if mn and j:  # an insertion before kept slots: they must follow it
                return self._general(seqs, [], suffix, mn + new[n_new - j :], [], markers)
            seqs.extend(self.emit(item, [], []) for item in mn)
            return seqs + [o.seq for o in suffix], None
        if mo:
            self._mark(markers)
        if not mn and not j:
            return seqs, (mo + span_p, markers) if mo else pending
        if len(mn) == 1:
            seq = self._one(mn[0], mo, span_p, markers)
            if seq is not None:
                return seqs + [seq] + [o.seq for o in suffix], None
        return self._general(seqs, mo, suffix, mn + new[n_new - j :], span_p, markers)

    def _mark(self, markers: list[int]) -> None:
        seq = self.marker()
        if seq is not None and seq not in markers:
            markers.append(seq)

    def _one(self, item: Item, mo: list[int], span_p: list[int], markers: list[int]) -> int | None:
        """One new slot in place of ``mo``; None when it cannot (a tool result that is no pure
        rewrite)."""
        slot = item.slot
        etype = slot.etype if slot is not None else self.em.events[item.seq].type
        if etype != "tool/result":
            return self.emit(item, mo + span_p, markers)
        if span_p or len(mo) != 1 or slot is None or self.em.events[mo[0]].type != "tool/result":
            return None
        old = self.em.data_of(mo[0])
        if ("meta" in old) != ("meta" in slot.body):
            return None
        new = {k: slot.body[k] if k in ("message", "meta") else v for k, v in old.items()}
        try:
            same = json_equal(_stripped(old), _stripped(new))
        except RecursionError:  # nested past what a comparison can walk: no rewrite then
            return None
        if not same:
            return None
        return self.em.rewrite(mo[0], new, markers)

    def _general(
        self,
        seqs: list[int],
        mo: list[int],
        suffix: list[Item],
        items: list[Item],
        span_p: list[int],
        markers: list[int],
    ) -> tuple[list[int], None]:
        span = mo + [o.seq for o in suffix] + span_p
        if suffix:
            self._mark(markers)
        first = items[0]
        first_type = first.slot.etype if first.slot is not None else self.em.events[first.seq].type
        if first_type == "tool/result":
            self.placeholder, self.placed = self.em.placeholder(span, markers), len(seqs)
            span = []
        for item in items:
            seqs.append(self.emit(item, span, markers if span else []))
            span = []
        return seqs, None
