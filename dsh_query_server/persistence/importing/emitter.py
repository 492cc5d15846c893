"""The mapper's output side (importers.md §0.2–§0.7): seqs, times, provenance, turn and step
markers, titles, placeholders, and the mirror of the fold's surface nodes that every replace is
computed from, so that each emitted log replay-validates and folds by construction."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import msgspec
from msgspec import UNSET

from ... import jsoncodec
from ...model.event import Event
from ...model.text import text_of
from ..contract.results import EventOutline, Payloads

JSONObject = dict[str, object]

ABORTED: JSONObject = {"kind": "aborted", "reason": {"kind": "user"}}
COMPLETED: JSONObject = {"kind": "completed"}
OPAQUE_LIMIT = 262_144
_SPACE = re.compile(r"[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]+")
_encode = msgspec.json.encode
_NO_FALLBACK = ("<command-", "<local-command-", "[Request interrupted")


def fallback_title(texts: list[str]) -> str:
    """§0.7: the prompt's text, whitespace collapsed and trimmed, cut at 100 code points."""
    title = _SPACE.sub(" ", " ".join(texts)).strip(" ")
    return title[:99] + "…" if len(title) > 100 else title


def scalar_record(record: JSONObject) -> JSONObject:
    """An oversized record keeps only its top-level scalar members (§0.2)."""
    return {k: v for k, v in record.items() if not isinstance(v, (dict, list))}


def _assembled(value: JSONObject, etype: str, seq: int, time: int) -> Event | None:
    """The event of ``value`` ({type, data} and a surface event's surfaceOp and
    sourceEventSeqs) with its JSON assembled around the payload's, which the event keeps by
    position: the bytes the whole object's encoding gives, without parsing them back. None for
    a lone surrogate (no UTF-8 form: the whole-object path escapes it)."""
    try:
        data_json = _encode(value["data"])
        head = b'{"type":%b,"seq":%d,"time":%d,"data":' % (_encode(etype), seq, time)
        if len(value) == 2:  # a log-only event: the payload ends the object
            raw = b"".join((head, data_json, b"}"))
            return Event.assemble(raw, etype, seq, time, data_json)
        op, sources = value.get("surfaceOp", UNSET), value.get("sourceEventSeqs", UNSET)
        tail = b"".join(
            (
                b"" if op is UNSET else b',"surfaceOp":' + _encode(op),
                b"" if sources is UNSET else b',"sourceEventSeqs":' + _encode(sources),
                b"}",
            )
        )
    except UnicodeEncodeError:
        return None
    raw = b"".join((head, data_json, tail))
    data = slice(len(head), len(head) + len(data_json))
    return Event.assemble_surface(raw, etype, seq, time, data, op, sources)


class WholeRead(Exception):
    """A read that keeps only texts (``Emitter.payloads``) met what needs an emitted event's
    payload: the read starts over whole (ImportBackend._inspect)."""


@dataclass(slots=True)
class Call:
    seq: int
    step: int


@dataclass(slots=True)
class Emitter:
    """Builds one imported log. ``plugin`` names the agent in synthetic sources."""

    plugin: str
    created_at: int
    events: list[Event] = field(default_factory=list[Event])
    reasons: list[str] = field(default_factory=list[str])
    nodes: list[int] = field(default_factory=list[int])  # the mirror (semantics.md §2.1)
    kinds: dict[int, str] = field(default_factory=dict[int, str])  # surface seq -> source tag
    shadowed: set[int] = field(default_factory=set[int])
    calls: dict[str, Call] = field(default_factory=dict[str, Call])
    turn: int = 0  # number of the open turn, 0 when none is open
    turns: int = 0
    turn_native: bool = False
    interrupted: bool = False
    step: int = 0  # open step, 0 when none
    steps: int = 0
    title_rank: int | None = None
    last_time: int = 0
    # the record being mapped
    line: int | None = None
    file: str | None = None
    time: int = 0
    surfaced: int = 0
    # a replace owed by the next surface event (Codex rollback): span seqs, causing markers
    pending: tuple[list[int], list[int]] | None = None
    # told every emitted value and its bytes (the window memo, importers.md §3.4)
    sink: Callable[[JSONObject, bytes], None] | None = None
    # what the reader reads of each event (None: every event whole): an event of a type it does
    # not read whole is kept as an EventOutline (with its text when it reads that), its payload
    # never encoded (the index build and title reads, issue 28)
    payloads: Payloads = None

    def __post_init__(self) -> None:
        self.last_time = self.created_at

    # -- records and provenance --------------------------------------------------------

    def begin(self, line: int | None, time: int | None, file: str | None = None) -> None:
        self.line, self.file, self.surfaced = line, file, 0
        self.time = self.last_time if time is None else time

    def reason(self, name: str) -> None:
        if name not in self.reasons:
            self.reasons.append(name)

    def provenance(self, synthetic: bool = False, *, eof: bool = False) -> JSONObject:
        out: JSONObject = {}
        if not eof and self.file is not None:
            out["file"] = self.file
        if not eof and self.line is not None:
            out["line"] = self.line
        if synthetic:
            out["synthetic"] = True
        return out

    def message_id(self, native: str | None) -> str:
        base = native if native else f"L{self.line}"
        k, self.surfaced = self.surfaced, self.surfaced + 1
        return base if k == 0 else f"{base}#{k}"

    # -- raw emission ------------------------------------------------------------------

    @property
    def seq(self) -> int:
        return len(self.events)

    def _put(self, value: JSONObject, time: int) -> int:
        seq = len(self.events)
        etype, data = value["type"], value["data"]
        if self.sink is None and type(etype) is str:
            reading = self.payloads
            event = (
                _assembled(value, etype, seq, time)
                if reading is None or etype in reading.whole
                else self._outline(value, etype, seq, time, reading.texts)
            )
            if event is not None:
                self.events.append(event)
                self.last_time = time
                return seq
        ordered: JSONObject = {"type": etype, "seq": seq, "time": time, "data": data}
        for key in ("surfaceOp", "sourceEventSeqs"):
            if key in value:
                ordered[key] = value[key]
        raw = jsoncodec.dumps(ordered)
        if self.sink is not None:
            self.sink(ordered, raw)
        self.events.append(Event.from_json(raw))
        self.last_time = time
        return seq

    def _outline(
        self, value: JSONObject, etype: str, seq: int, time: int, texts: frozenset[str]
    ) -> Event:
        """The event as its outline: its envelope, and its text when the reader reads it. The
        text is taken from the payload as it stands, which is what decoding its encoding gives
        (JSON keeps every string; a lone surrogate is escaped and decoded back)."""
        op = value.get("surfaceOp", UNSET)
        if etype == "tool/result" and type(op) is dict:
            raise WholeRead  # the fold compares a rewrite's payload with the one it replaces
        text = text_of(etype, value["data"]) if etype in texts else ""
        sources = value.get("sourceEventSeqs", UNSET)
        return cast(Event, EventOutline(etype, seq, time, text, op, sources))

    def data_of(self, seq: int) -> Any:
        """The payload of an emitted event, for a mapper that copies or replays one. An outline
        has none: the read starts over whole (``WholeRead``)."""
        event = self.events[seq]
        if isinstance(event, EventOutline):
            raise WholeRead
        return event.data()

    def log(
        self,
        etype: str,
        data: JSONObject,
        *,
        synthetic: bool = False,
        before: bool = False,
        eof: bool = False,
    ) -> int:
        """A log-only event; ``before`` (inserted ahead of the record's own events) and ``eof``
        take the preceding event's time."""
        data["import"] = self.provenance(synthetic, eof=eof)
        time = self.last_time if before or eof else self.time
        return self._put({"type": etype, "data": data}, time)

    def opaque(self, name: str, record: JSONObject, size: int) -> int:
        if size > OPAQUE_LIMIT:
            return self.log(name, {"record": scalar_record(record), "recordBytes": size})
        return self.log(name, {"record": record})

    def bad_line(self, line: int, offset: int, length: int, preview: str) -> None:
        self.begin(line, None)
        self.reason("damaged-lines")
        self.log("import/bad-line", {"byteOffset": offset, "length": length, "preview": preview})

    # -- turns and steps (§0.3) --------------------------------------------------------

    def open_turn(self, record: JSONObject | None = None) -> None:
        self.close_turn()
        self.turns += 1
        self.turn, self.steps, self.interrupted = self.turns, 0, False
        self.turn_native = record is not None
        data: JSONObject = {"turn": self.turn}
        if record is not None:
            data["record"] = record
        self.log("turn/start", data, synthetic=True)

    def close_turn(
        self, record: JSONObject | None = None, *, eof: bool = False, aborted: bool = False
    ) -> None:
        if not self.turn:
            return
        self.close_step(eof=eof)
        reason = ABORTED if aborted or self.interrupted else COMPLETED
        data: JSONObject = {"turn": self.turn, "reason": reason}
        if record is not None:
            data["record"] = record
        self.log("turn/end", data, synthetic=True, before=record is None, eof=eof)
        self.turn, self.turn_native, self.interrupted = 0, False, False

    def ensure_turn(self) -> None:
        """T2: model or tool output with no open turn opens one."""
        if not self.turn:
            self.open_turn()

    def open_step(self) -> None:
        self.close_step()
        self.ensure_turn()
        self.steps += 1
        self.step = self.steps
        self.log("step/start", {"turn": self.turn, "step": self.step}, synthetic=True)

    def close_step(self, *, eof: bool = False) -> None:
        if self.step:
            data: JSONObject = {"turn": self.turn, "step": self.step}
            self.log("step/end", data, synthetic=True, before=True, eof=eof)
            self.step = 0

    # -- surface (§0.5) ----------------------------------------------------------------

    def current_span(self, start: int) -> list[int]:
        """The mirror's nodes from position ``start`` to the end."""
        return self.nodes[start:]

    def emit_surface(
        self,
        etype: str,
        data: JSONObject,
        tag: str,
        *,
        span: list[int] | None = None,
        markers: list[int] | None = None,
        extra_src: list[int] | None = None,
        eof: bool = False,
    ) -> int:
        """Emit a surface event. ``span`` (a contiguous run of the mirror) is replaced, citing it
        and ``markers``; a pending rollback is taken instead when no span is given."""
        if span is None and markers is None and self.pending is not None:
            if etype == "tool/result":
                self.placeholder()
            else:
                span, markers = self.pending
                self.pending = None
        span = span or []
        markers = markers or []
        if span and etype == "tool/result":  # tool results only append (§0.5)
            self.placeholder(span, markers)
            span, markers = [], []
        data["import"] = self.provenance(synthetic=tag == "placeholder", eof=eof)
        value: JSONObject = {"type": etype, "data": data}
        src = [*span, *sorted(markers)]
        for s in extra_src or []:
            if s not in src:
                src.append(s)
        if span:
            value["surfaceOp"] = {"op": "replace", "start": span[0], "end": span[-1]}
        else:
            value["surfaceOp"] = "append"
        if src:
            value["sourceEventSeqs"] = src
        seq = self._put(value, self.last_time if eof or tag == "placeholder" else self.time)
        if span:
            at = self.nodes.index(span[0])
            self.nodes[at : at + len(span)] = [seq]
            for s in span:
                self.shadowed.add(s)
                del self.kinds[s]
        else:
            self.nodes.append(seq)
        self.kinds[seq] = tag
        return seq

    def placeholder(
        self, span: list[int] | None = None, markers: list[int] | None = None, *, eof: bool = False
    ) -> int:
        """An empty synthetic message standing where history was removed (§0.5)."""
        if span is None and markers is None and self.pending is not None:
            span, markers = self.pending
            self.pending = None
        self.reason("placeholder")
        data: JSONObject = {
            "id": f"placeholder-{self.seq}",
            "role": "user",
            "content": [],
            "source": {"kind": "plugin", "plugin": self.plugin, "placeholder": True},
        }
        return self.emit_surface(
            "user/message", data, "placeholder", span=span or [], markers=markers or [], eof=eof
        )

    def tool_call(self, call_id: str, name: str, arguments: str) -> None:
        data: JSONObject = {
            "turn": self.turn,
            "step": self.step,
            "callId": call_id,
            "name": name,
            "arguments": arguments,
        }
        seq = self.log("tool/call", data, synthetic=True)
        self.calls[call_id] = Call(seq, self.step)

    def tool_result(
        self,
        call_id: str,
        msg_id: str,
        content: list[object],
        is_error: bool,
        meta: JSONObject | None,
        *,
        replay: bool = False,
        extra_src: list[int] | None = None,
        span: list[int] | None = None,
        markers: list[int] | None = None,
    ) -> int:
        """``replay``: an item of a replacement history (turn = the last opened, step 0)."""
        if not replay:
            self.ensure_turn()
        call = self.calls.get(call_id)
        block: JSONObject = {"type": "tool-result", "toolCallId": call_id, "content": content}
        if is_error:
            block["isError"] = True
        step = 0 if replay else call.step if call is not None else self.step
        data: JSONObject = {
            "turn": self.turns if replay else self.turn,
            "step": step,
            "message": {
                "id": msg_id,
                "role": "user",
                "content": [block],
                "source": {"kind": "tool", "callId": call_id},
            },
        }
        if meta is not None:
            data["meta"] = meta
        src = [call.seq] if call is not None else []
        return self.emit_surface(
            "tool/result",
            data,
            "tool",
            extra_src=src + (extra_src or []),
            span=span,
            markers=markers,
        )

    # -- titles (§0.7) -----------------------------------------------------------------

    def native_title(
        self,
        rank: int,
        title: str,
        source: JSONObject,
        record: JSONObject,
        *,
        time: int | None = None,
    ) -> bool:
        if self.title_rank is not None and rank < self.title_rank:
            return False
        self.title_rank = rank
        data: JSONObject = {"title": title, "messageSeqs": [], "source": source, "record": record}
        data["import"] = self.provenance(True)
        self._put({"type": "session/title", "data": data}, self.time if time is None else time)
        return True

    def fallback(self, prompt_seq: int, texts: list[str]) -> None:
        if self.title_rank is not None:
            return
        title = fallback_title(texts)
        if not title or title.startswith(_NO_FALLBACK):
            return
        self.title_rank = 0
        self.log(
            "session/title",
            {"title": title, "messageSeqs": [prompt_seq], "source": {"kind": "fallback"}},
            synthetic=True,
        )

    def end_seed(self) -> None:
        self.close_turn()
        self.log("session/end-seed", {}, synthetic=True, before=True)

    def finish(self) -> None:
        """T4: end of file closes the open step and turn."""
        self.line = None
        self.close_step(eof=True)
        self.close_turn(eof=True)
