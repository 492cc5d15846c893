"""Gemini CLI session records -> dsh events (importers.md §7.3–§7.5).

The mapper replays the record stream the way Gemini CLI loads it (google-gemini/gemini-cli
``packages/core/src/services/chatRecordingService.ts``, ``loadConversationRecord``): an ordered
map of messages by id, where a record repeating an id updates that message in place,
``$rewindTo`` drops a message and everything after it, and ``$set.messages`` replaces the whole
list. After every record the surface is brought back to the units of the list (units.py) by the
smallest edit the fold allows (surface.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Container
from dataclasses import dataclass, field

from ..importing.emitter import OPAQUE_LIMIT, JSONObject, fallback_title, scalar_record
from ..importing.lines import BadSegment, Item, Record
from ..importing.values import arr, nonempty, obj, parse_time, text_blocks
from .parts import PROVIDER, function_response, part_list
from .surface import Diff, GeminiEmitter
from .surface import Item as SlotItem
from .units import answered_by, unit

_TITLE_SOURCE: JSONObject = {"kind": "provider", "provider": PROVIDER}
_NO_FALLBACK = ("/", "?")  # Gemini CLI's own "ignored" prompts (sessionUtils.ts)


@dataclass(slots=True)
class _Msg:
    slots: list[tuple[bytes, int]]  # digest and event seq of each slot of its unit
    answers: tuple[str, ...]  # the call ids its toolCalls give a result
    value: JSONObject | None  # kept only when its unit depends on earlier messages


class _Without:
    """The calls answered by the whole list except one message's own answers."""

    def __init__(self, counts: Counter[str], minus: tuple[str, ...]) -> None:
        self._counts, self._minus = counts, minus

    def __contains__(self, call_id: object) -> bool:
        # a count, not the key: a Counter keeps the keys of counts that fell to 0
        if not isinstance(call_id, str):
            return False
        return self._counts[call_id] - self._minus.count(call_id) > 0


def _depends(message: JSONObject) -> bool:
    """Whether a unit depends on earlier messages: a user message answering calls."""
    if message.get("type") != "user":
        return False
    return any(
        nonempty((function_response(p) or {}).get("id")) for p in part_list(message.get("content"))
    )


def _record_of(value: JSONObject, size: int) -> JSONObject:
    return scalar_record(value) if size > OPAQUE_LIMIT else value


def message_time(value: JSONObject) -> int | None:
    """A message record's time: the latest of its ``timestamp`` and its tool calls' (a record
    that adds tool calls to a message is written when they complete)."""
    times = [parse_time(value.get("timestamp"))]
    for entry in arr(value.get("toolCalls")) or []:
        e = obj(entry)
        if e is not None:
            times.append(parse_time(e.get("timestamp")))
    known = [t for t in times if t is not None]
    return max(known) if known else None


@dataclass(slots=True)
class GeminiMapper:
    em: GeminiEmitter
    order: list[str] = field(default_factory=list[str])
    msgs: dict[str, _Msg] = field(default_factory=dict[str, _Msg])
    answered: Counter[str] = field(default_factory=Counter[str])
    latest: dict[tuple[str, int], int] = field(default_factory=dict[tuple[str, int], int])
    pending: tuple[list[int], list[int]] | None = None
    opened: set[str] = field(default_factory=set[str])  # prompts that opened their turn
    usage: set[str] = field(default_factory=set[str])  # messages whose usage was emitted
    step_msg: str | None = None  # the message whose step is open
    turn_prompt: str | None = None  # the prompt that opened the open turn
    results: set[str] = field(default_factory=set[str])  # call ids answered in toolCalls
    responses: set[str] = field(default_factory=set[str])  # ids of recorded functionResponses
    values: dict[str, JSONObject] = field(default_factory=dict[str, JSONObject])  # this change's

    # -- the record stream (JSONL) -----------------------------------------------------

    def feed(self, item: Item) -> None:
        if isinstance(item, BadSegment):
            self.em.bad_line(item.line, item.offset, item.length, item.preview)
        else:
            self.record(item)

    def record(self, rec: Record) -> None:
        """One record, classified in ``loadConversationRecord``'s order."""
        v, em = rec.value, self.em
        s = v.get("$set")
        settings = obj(s)
        if isinstance(v.get("$rewindTo"), str):
            em.begin(rec.line, None)
            self._rewind(v, rec.size)
        elif isinstance(v.get("id"), str):
            em.begin(rec.line, message_time(v))
            self._message(v, rec.size)
        elif isinstance(s, (dict, list)):
            em.begin(rec.line, parse_time(settings.get("lastUpdated")) if settings else None)
            self._set(v, rec.size)
        elif isinstance(v.get("sessionId"), str) and isinstance(v.get("projectHash"), str):
            em.begin(rec.line, parse_time(v.get("startTime")) or parse_time(v.get("lastUpdated")))
            self._metadata(v, rec.size)
        else:
            em.begin(rec.line, None)
            em.opaque("gemini/record", v, rec.size)

    def _message(self, v: JSONObject, size: int) -> None:
        mid = str(v["id"])
        self._note(v)
        em = self.em
        if self._grown(mid, v):
            return
        if mid not in self.msgs:
            if not self._sync(len(self.order), [*self.order, mid], {mid: v}, normal=True):
                em.opaque(_kind_name(v), v, size)
            return
        p = len(self.order) - 1 if self.order[-1] == mid else self.order.index(mid)
        marked: list[int] = []

        def marker() -> int:
            marked.append(em.opaque("gemini/update", v, size))
            return marked[0]

        changed = self._sync(
            p, self.order, {mid: v}, normal=p == len(self.order) - 1, marker=marker
        )
        if not changed and not marked:
            em.opaque("gemini/update", v, size)

    def _grown(self, mid: str, v: JSONObject) -> bool:
        """The common case without a diff: a new message, or the last one re-recorded with slots
        added after its old ones, nothing pending. False when it is not that case."""
        if self.pending is not None:
            return False
        old = self.msgs.get(mid)
        if old is not None and self.order[-1] != mid:
            return False
        own = old.answers if old is not None else ()
        slots = unit(v, _Without(self.answered, own))
        have = old.slots if old is not None else []
        if len(slots) <= len(have) or any(
            d != s.digest for (d, _), s in zip(have, slots, strict=False)
        ):
            return False
        self.values = {mid: v}
        seqs = [
            self._emit(SlotItem(mid, k, s.digest, s), [], [], True)
            for k, s in enumerate(slots)
            if k >= len(have)
        ]
        self.values = {}
        answers = tuple(answered_by(v))
        self.answered.subtract(own)
        self.answered.update(answers)
        kept = _Msg(
            [*have, *zip((s.digest for s in slots[len(have) :]), seqs, strict=True)],
            answers,
            v if _depends(v) else None,
        )
        if old is None:
            self.order.append(mid)
        self.msgs[mid] = kept
        return True

    def _set(self, v: JSONObject, size: int) -> None:
        em, s = self.em, obj(v["$set"])
        messages = arr(s.get("messages")) if s is not None else None
        if messages is None:
            em.opaque("gemini/set", v, size)
        else:
            vals: dict[str, JSONObject] = {}
            for m in messages:
                d = obj(m)
                if d is not None and isinstance(d.get("id"), str):
                    vals[str(d["id"])] = d  # a repeated id keeps its first position
            kind = self._dropping(vals)
            if kind == "compaction":
                marker = em.log("compaction/start", {"record": _record_of(v, size)}, synthetic=True)
            else:
                marker = em.opaque("gemini/set", v, size)
            if kind == "rollback" and self.turn_prompt is not None and self.turn_prompt not in vals:
                em.interrupted = True  # the open turn's prompt is taken back: it was aborted
            self._sync(0, list(vals), vals, normal=False, markers=[marker])
        if s is not None:
            self._title(s.get("summary"), v, size)

    def _dropping(self, vals: dict[str, JSONObject]) -> str | None:
        """How a new list drops surfaced messages of the old one: ``rollback`` when every one
        dropped comes after every one kept (Gemini CLI's rollback of an aborted request),
        ``compaction`` otherwise, None when it drops none (a start-up or resume rewrite)."""
        surfaced = [mid for mid in self.order if self.msgs[mid].slots]
        gone = [i for i, mid in enumerate(surfaced) if mid not in vals]
        if not gone:
            return None
        kept = [i for i, mid in enumerate(surfaced) if mid in vals]
        return "rollback" if not kept or max(kept) < min(gone) else "compaction"

    def _rewind(self, v: JSONObject, size: int) -> None:
        marker = self.em.opaque("gemini/rewind", v, size)
        target = str(v["$rewindTo"])
        p = self.order.index(target) if target in self.msgs else 0
        self._sync(p, self.order[:p], {}, normal=False, markers=[marker])

    def _metadata(self, v: JSONObject, size: int) -> None:
        marker = self.em.opaque("gemini/session", v, size)
        vals: dict[str, JSONObject] = {}
        new_order = list(self.order)
        for m in arr(v.get("messages")) or []:
            d = obj(m)
            if d is None or not isinstance(d.get("id"), str):
                continue
            mid = str(d["id"])
            if mid not in self.msgs and mid not in vals:
                new_order.append(mid)
            vals[mid] = d
        if vals:
            p = min(new_order.index(mid) for mid in vals)
            self._sync(p, new_order, vals, normal=False, markers=[marker])
        self._title(v.get("summary"), v, size)

    def _title(self, summary: object, v: JSONObject, size: int) -> None:
        if isinstance(summary, str) and summary:
            self.em.native_title(1, summary, dict(_TITLE_SOURCE), _record_of(v, size))

    def _note(self, v: JSONObject) -> None:
        """What the approximation reasons need to know of a message record."""
        self.results.update(answered_by(v))
        if v.get("type") == "user":
            for part in part_list(v.get("content")):
                call_id = nonempty((function_response(part) or {}).get("id"))
                if call_id is not None:
                    self.responses.add(call_id)
        elif v.get("type") == "info" and any(
            "text" not in (obj(p) or {}) for p in part_list(v.get("content"))
        ):
            self.em.reason("binary-info")

    # -- the one-file JSON session ------------------------------------------------------

    def document(self, doc: JSONObject) -> None:
        """A ``.json`` session: every message appended in order (the file records no rewrite),
        then its summary."""
        em = self.em
        em.begin(None, parse_time(doc.get("startTime")))
        em.log("gemini/session", {"record": {k: x for k, x in doc.items() if k != "messages"}})
        for k, m in enumerate(arr(doc.get("messages")) or []):
            em.message = k
            d = obj(m)
            if d is None or not isinstance(d.get("id"), str):
                em.begin(None, None)
                em.log("gemini/record", {"record": m})
                continue
            em.begin(None, message_time(d))
            self._note(d)
            key = f"{k}:{d['id']}"  # the array is kept as is: an id may repeat
            if not self._sync(len(self.order), [*self.order, key], {key: d}, normal=True):
                em.log(_kind_name(d), {"record": d})
        em.message = None
        em.reason("unrecorded-compression")
        em.begin(None, parse_time(doc.get("lastUpdated")))
        summary = doc.get("summary")
        if isinstance(summary, str) and summary:
            em.native_title(1, summary, dict(_TITLE_SOURCE), {"summary": summary})

    # -- keeping the surface equal to the list's units ----------------------------------

    def _sync(
        self,
        p: int,
        new_order: list[str],
        vals: dict[str, JSONObject],
        *,
        normal: bool,
        marker: Callable[[], int] | None = None,
        markers: list[int] | None = None,
    ) -> bool:
        """Replace the messages from position ``p`` on by ``new_order[p:]`` (``vals`` gives the
        new or changed values; the others keep theirs). Returns whether a surface event was
        emitted. ``normal``: the change is the growth of the conversation (turns, steps, tool
        calls, usage and titles as it happens), else a replay (§7.4)."""
        em = self.em
        old_ids = self.order[p:]
        old = [
            SlotItem(mid, k, d, None, s)
            for mid in old_ids
            for k, (d, s) in enumerate(self.msgs[mid].slots)
        ]
        base: Container[str]
        counts: Counter[str] | None = None
        if p >= len(self.order) - 1 and len(new_order) - p <= 1:
            own = self.msgs[self.order[p]].answers if p < len(self.order) else ()
            base = _Without(self.answered, own)
        else:
            counts = Counter()
            for mid in new_order[:p]:
                counts.update(self.msgs[mid].answers)
            base = counts
        new: list[SlotItem] = []
        fresh: dict[str, tuple[JSONObject, tuple[str, ...]]] = {}
        for mid in new_order[p:]:
            value = vals.get(mid)
            msg = self.msgs.get(mid)
            if value is None and msg is not None and msg.value is None:
                new.extend(SlotItem(mid, k, d, None, s) for k, (d, s) in enumerate(msg.slots))
                answers = msg.answers
            else:
                value = value if value is not None else msg.value  # type: ignore[union-attr]
                assert value is not None
                slots = unit(value, base)
                new.extend(SlotItem(mid, k, s.digest, s) for k, s in enumerate(slots))
                answers = tuple(answered_by(value))
                fresh[mid] = (value, answers)
            if counts is not None:
                counts.update(answers)
        before = em.seq
        self.values = {mid: fv[0] for mid, fv in fresh.items()}

        def emit(item: SlotItem, span: list[int], marks: list[int]) -> int:
            return self._emit(item, span, marks, normal)

        diff = Diff(em, emit, marker or (lambda: None), list(markers or []))
        seqs, self.pending = diff.apply(old, new, self.pending)
        self.values = {}
        self._commit(old_ids, new_order, p, new, seqs, fresh)
        if diff.placeholder is not None:  # it stays current: it joins the unit it precedes
            mid = new[diff.placed].mid
            at = sum(1 for item in new[: diff.placed] if item.mid == mid)
            self.msgs[mid].slots.insert(at, (b"", diff.placeholder))
        return any(e.type in _SURFACE for e in em.events[before:])

    def _commit(
        self,
        old_ids: list[str],
        new_order: list[str],
        p: int,
        new: list[SlotItem],
        seqs: list[int],
        fresh: dict[str, tuple[JSONObject, tuple[str, ...]]],
    ) -> None:
        kept = set(new_order[p:])
        for mid in old_ids:
            if mid not in kept:
                self.answered.subtract(self.msgs.pop(mid).answers)
        grouped: dict[str, list[tuple[bytes, int]]] = {mid: [] for mid in new_order[p:]}
        for item, seq in zip(new, seqs, strict=True):
            grouped[item.mid].append((item.digest, seq))
        for mid, slots in grouped.items():
            old = self.msgs.get(mid)
            if mid in fresh:
                value, answers = fresh[mid]
                if old is not None:
                    self.answered.subtract(old.answers)
                self.answered.update(answers)
                self.msgs[mid] = _Msg(slots, answers, value if _depends(value) else None)
            else:
                assert old is not None
                old.slots = slots
        self.order = new_order

    def _emit(self, item: SlotItem, span: list[int], markers: list[int], normal: bool) -> int:
        key = (item.mid, item.k)
        prev = self.latest.get(key)
        if item.slot is None:
            seq = self._copy(item.seq, span, markers)
        else:
            extra = [prev] if prev is not None and prev not in span else []
            seq = self._fresh(item, span, markers, normal, extra)
        self.latest[key] = seq
        return seq

    def _copy(self, old: int, span: list[int], markers: list[int]) -> int:
        """An unchanged slot that must move: its event again, as a replay, citing it."""
        em = self.em
        event = em.events[old]
        data = em.data_of(old)
        data.pop("import", None)
        data.pop("usage", None)
        if event.type != "user/message":
            data["turn"], data["step"] = em.turns, 0
        tag = "tool" if event.type == "tool/result" else "model"
        if event.type == "user/message":
            tag = "user" if (obj(data.get("source")) or {}).get("kind") == "user" else "plugin"
        return em.emit_surface(event.type, data, tag, span=span, markers=markers, extra_src=[old])

    def _fresh(
        self, item: SlotItem, span: list[int], markers: list[int], normal: bool, extra: list[int]
    ) -> int:
        em, slot = self.em, item.slot
        assert slot is not None
        if slot.etype == "user/message":
            opens = normal and slot.tag == "user" and item.mid not in self.opened
            if opens:
                em.open_turn()
                self.opened.add(item.mid)
                self.turn_prompt = item.mid
            elif normal:
                em.close_step()
            seq = em.emit_surface(
                slot.etype, slot.body, slot.tag, span=span, markers=markers, extra_src=extra
            )
            if opens:
                texts = text_blocks(arr(slot.body.get("content")) or [])
                if not fallback_title(texts).startswith(_NO_FALLBACK):
                    em.fallback(seq, texts)
            return seq
        if slot.etype == "assistant/message":
            data: JSONObject = {"turn": em.turns, "step": 0, "message": slot.body["message"]}
            if normal:
                if not (em.step and self.step_msg == item.mid):
                    em.open_step()
                    self.step_msg = item.mid
                data["turn"], data["step"] = em.turn, em.step
                tokens = obj((self.values.get(item.mid) or {}).get("tokens"))
                if tokens is not None and item.mid not in self.usage:
                    data["usage"] = tokens
                    self.usage.add(item.mid)
            seq = em.emit_surface(
                slot.etype, data, slot.tag, span=span, markers=markers, extra_src=extra
            )
            if normal:
                for block in slot.calls():
                    em.tool_call(str(block["id"]), str(block["name"]), str(block["arguments"]))
            return seq
        call = em.calls.get(slot.call_id)
        turn, step = em.turns, 0
        if normal:
            em.ensure_turn()
            turn, step = em.turn, call.step if call is not None else em.step
        data = {"turn": turn, "step": step, **slot.body}
        src = ([call.seq] if call is not None else []) + extra
        return em.emit_surface(
            slot.etype, data, slot.tag, span=span, markers=markers, extra_src=src
        )

    def finish(self) -> None:
        """End of file: closers, a placeholder for a span still pending, the reasons."""
        em = self.em
        em.finish()
        if self.pending is not None:
            span, markers = self.pending
            self.pending = None
            em.placeholder(span, markers, eof=True)
        if self.results - self.responses:
            em.reason("unrecorded-compression")


_SURFACE = ("user/message", "assistant/message", "tool/result")


def _kind_name(v: JSONObject) -> str:
    """The opaque type of a message that adds nothing to the surface."""
    kind = v.get("type")
    if kind == "user" and any(function_response(p) for p in part_list(v.get("content"))):
        return "gemini/response-copy"
    if isinstance(kind, str) and kind.isascii() and kind.replace("_", "").isalnum():
        return f"gemini/{kind}"
    return "gemini/message"
