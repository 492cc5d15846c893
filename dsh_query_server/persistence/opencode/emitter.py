"""The shared emitter (importers.md §0.2–§0.5) with what OpenCode's records need besides: row
provenance instead of lines, native records on step markers, turns that end in an error, tool
results whose content a prune rewrote, and copies of earlier surface events."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

from ..importing.emitter import ABORTED, COMPLETED, Emitter, JSONObject

PLUGIN = "opencode"


@dataclass(slots=True)
class OpenCodeEmitter(Emitter):
    at: JSONObject = field(default_factory=dict[str, object])  # the row mapped: message, part
    turn_error: JSONObject | None = None  # the open turn's last assistant error, when not aborted

    def locate(self, time: int | None, **row: str) -> None:
        """The record being mapped: its ids (``session``, ``message``, ``part``) and time."""
        self.at = cast(JSONObject, row)
        self.line, self.file, self.surfaced = None, None, 0
        self.time = self.last_time if time is None else time

    def provenance(self, synthetic: bool = False, *, eof: bool = False) -> JSONObject:
        if eof:
            return {"synthetic": True} if synthetic else {}
        return {**self.at, "synthetic": True} if synthetic else self.at

    # -- steps carry their step-start / step-finish parts ------------------------------

    def open_step(self, record: JSONObject | None = None) -> None:
        self.close_step()
        self.ensure_turn()
        self.steps += 1
        self.step = self.steps
        data: JSONObject = {"turn": self.turn, "step": self.step}
        if record is not None:
            data["record"] = record
        self.log("step/start", data, synthetic=True)

    def close_step(self, *, eof: bool = False, record: JSONObject | None = None) -> None:
        if self.step:
            data: JSONObject = {"turn": self.turn, "step": self.step}
            if record is not None:
                data["record"] = record
            self.log("step/end", data, synthetic=True, before=record is None, eof=eof)
            self.step = 0

    def close_turn(
        self, record: JSONObject | None = None, *, eof: bool = False, aborted: bool = False
    ) -> None:
        if not self.turn:
            return
        self.close_step(eof=eof)
        if aborted or self.interrupted:
            reason = ABORTED
        else:
            reason = self.turn_error if self.turn_error is not None else COMPLETED
        data: JSONObject = {"turn": self.turn, "reason": reason}
        if record is not None:
            data["record"] = record
        self.log("turn/end", data, synthetic=True, before=record is None, eof=eof)
        self.turn, self.turn_native, self.interrupted, self.turn_error = 0, False, False, None

    # -- rewrites and copies -------------------------------------------------------------

    def rewrite_result(self, target: int, content: list[object], marker: int) -> int:
        """Replace the current tool/result ``target`` by one that differs only in its content
        (semantics.md §2.1 step 4.6): everything else, provenance included, is the target's."""
        data = self.data_of(target)
        data["message"]["content"][0]["content"] = content
        value: JSONObject = {
            "type": "tool/result",
            "data": data,
            "surfaceOp": {"op": "replace", "start": target, "end": target},
            "sourceEventSeqs": [target, marker],
        }
        seq = self._put(value, self.time)
        self.nodes[self.nodes.index(target)] = seq
        self.shadowed.add(target)
        self.kinds[seq] = self.kinds.pop(target)
        return seq

    def copy(
        self,
        source: int,
        *,
        span: list[int] | None = None,
        markers: list[int] | None = None,
        content: list[object] | None = None,
    ) -> int:
        """Append (or, with ``span``, replace by) a copy of the surface event ``source``: the
        same data under the id ``<native id>#copy``, citing the source; ``content`` replaces a tool
        result's content."""
        event = self.events[source]
        data = self.data_of(source)
        message = data if event.type == "user/message" else data["message"]
        message["id"] = f"{str(message['id']).removesuffix('#copy')}#copy"
        if content is not None:
            message["content"][0]["content"] = content
        provenance = data.pop("import", {})
        saved = self.at
        self.at = {k: v for k, v in provenance.items() if k != "synthetic"}
        try:
            return self.emit_surface(
                str(event.type),
                data,
                self.kinds.get(source, "copy"),
                span=span,
                markers=markers,
                extra_src=[source],
            )
        finally:
            self.at = saved
