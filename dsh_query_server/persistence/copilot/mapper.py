"""Copilot CLI session events -> dsh events (importers.md §9.3–§9.5).

One mapper reads one log: the main agent's records (``agent`` None, sub-agents' records then
stay opaque) or one sub-agent's (every other record is skipped). Compactions are positional:
the summary replaces what was on the surface when the compaction started, and what arrived
while it ran stays after it, as Copilot itself rebuilds the request.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

from ... import jsoncodec
from ..importing.emitter import OPAQUE_LIMIT, Emitter, JSONObject, scalar_record
from ..importing.lines import BadSegment, Item, Record
from ..importing.values import arr, nonempty, obj, parse_time
from .layout import Presets, agent_key

PLUGIN = "copilot-cli"
PROVIDER = "github-copilot"
SYSTEM = "system"  # the surface tag of a system-role system.message (kept by compactions)


@dataclass(slots=True)
class _Started:
    """A compaction under way: its marker and the last surface node when it started."""

    marker: int
    last: int | None


def _record_of(v: JSONObject, size: int) -> JSONObject:
    return scalar_record(v) if size > OPAQUE_LIMIT else v


def _arguments(request: JSONObject) -> str:
    """A tool request's arguments as the call's JSON text (custom tools stream raw text)."""
    if "arguments" not in request:
        return "{}"
    args = request["arguments"]
    return args if isinstance(args, str) else jsoncodec.dumps(args).decode("utf-8")


def _calls(requests: object) -> list[tuple[str, str, str]] | None:
    """(call id, name, arguments) per tool request; None when one is malformed."""
    out: list[tuple[str, str, str]] = []
    for r in arr(requests) or []:
        d = obj(r)
        call_id = nonempty(d.get("toolCallId")) if d is not None else None
        if d is None or call_id is None or not isinstance(d.get("name"), str):
            return None
        out.append((call_id, str(d["name"]), _arguments(d)))
    return out if requests is None or isinstance(requests, list) else None


@dataclass(slots=True)
class CopilotMapper:
    em: Emitter
    agent: str | None = None  # the sub-agent whose log this is; None for the main agent
    model: str | None = None
    started: _Started | None = None
    presets: Presets = field(default_factory=Presets)
    first_time: int | None = None  # a sub-agent log: its first record's time (its createdAt)
    preset: str | None = None  # ... and its agent name
    seen: bool = False  # a sub-agent log: whether any record of it was read

    def feed(self, item: Item) -> None:
        if isinstance(item, BadSegment):
            if self.agent is None:  # a damaged line belongs to no sub-agent it could name
                self.em.bad_line(item.line, item.offset, item.length, item.preview)
            return
        self.record(item)

    def record(self, rec: Record) -> None:
        v, em = rec.value, self.em
        key = agent_key(v)
        if self.agent is not None:
            self.presets.note(v)
            if key != self.agent:
                return
            if not self.seen:
                self.seen = True
                self.first_time = parse_time(v.get("timestamp"))
                self.preset = self.presets.of(self.agent)
                if self.first_time is not None:
                    em.created_at = em.last_time = self.first_time
        em.begin(rec.line, parse_time(v.get("timestamp")))
        kind, data = v.get("type"), obj(v.get("data"))
        name = kind if isinstance(kind, str) else "record"
        if self.agent is None and key is not None:
            em.opaque(f"copilot/agent/{name}", v, rec.size)
            return
        model_key = _MODEL_KEYS.get(name)
        if data is not None and model_key is not None:
            self.model = nonempty(data.get(model_key)) or self.model
        handler = self.HANDLERS.get(name)
        if data is None or handler is None or not handler(self, v, data, rec):
            em.opaque(f"copilot/{name}", v, rec.size)

    # -- messages (§9.3) ---------------------------------------------------------------

    def _user(self, v: JSONObject, d: JSONObject, rec: Record) -> bool:
        em, shown = self.em, d.get("content")
        if not isinstance(shown, str):
            return False
        sent = d.get("transformedContent")
        attachments = arr(d.get("attachments")) or []
        if attachments and (
            not isinstance(sent, str) or any("assetId" in (obj(a) or {}) for a in attachments)
        ):
            em.reason("attachments")
        origin = d.get("source")
        prompt = False
        if d.get("isAutopilotContinuation") is True:
            source: JSONObject = {"kind": "plugin", "plugin": PLUGIN, "autopilot": True}
        elif origin is None or origin == "user":
            source = {"kind": "user"}
            prompt = True
        else:
            source = {"kind": "plugin", "plugin": PLUGIN, "origin": origin}
        if d.get("delivery") == "steering":
            em.close_step()
        else:
            em.open_turn()
        data: JSONObject = {
            "id": em.message_id(nonempty(v.get("id"))),
            "role": "user",
            "content": [{"type": "text", "text": sent if isinstance(sent, str) else shown}],
            "source": source,
        }
        seq = em.emit_surface("user/message", data, "user" if prompt else "plugin")
        if prompt:
            em.fallback(seq, [shown])
        return True

    def _system(self, v: JSONObject, d: JSONObject, rec: Record) -> bool:
        em, content, role = self.em, d.get("content"), d.get("role")
        if not isinstance(content, str) or not isinstance(role, str):
            return False
        em.close_step()
        source: JSONObject = {"kind": "plugin", "plugin": PLUGIN, "role": role}
        if isinstance(d.get("name"), str):
            source["name"] = d["name"]
        data: JSONObject = {
            "id": em.message_id(nonempty(v.get("id"))),
            "role": "user",
            "content": [{"type": "text", "text": content}],
            "source": source,
        }
        em.emit_surface("user/message", data, SYSTEM if role == SYSTEM else "role")
        return True

    def _assistant(self, v: JSONObject, d: JSONObject, rec: Record) -> bool:
        em, content = self.em, d.get("content")
        calls = _calls(d.get("toolRequests"))
        if not isinstance(content, str) or calls is None:
            return False
        if not em.step:
            em.open_step()
        blocks: list[object] = []
        if nonempty(d.get("reasoningText")) is not None:
            blocks.append({"type": "reasoning", "text": d["reasoningText"]})
        if content:
            blocks.append({"type": "text", "text": content})
        blocks.extend(
            {"type": "tool-call", "id": c, "name": n, "arguments": a} for c, n, a in calls
        )
        source: JSONObject = {
            "kind": "model",
            "provider": PROVIDER,
            "model": nonempty(d.get("model")) or self.model or "unknown",
        }
        replay = {k: d[k] for k in ("reasoningOpaque", "encryptedContent") if k in d}
        if replay:
            source["replayState"] = replay
        message: JSONObject = {
            "id": em.message_id(nonempty(v.get("id"))),
            "role": "assistant",
            "content": blocks,
            "source": source,
        }
        data: JSONObject = {"turn": em.turn, "step": em.step, "message": message}
        tokens = d.get("outputTokens")
        if type(tokens) is int:
            data["usage"] = {"outputTokens": tokens}
        em.emit_surface("assistant/message", data, "model")
        for call_id, name, args in calls:
            em.tool_call(call_id, name, args)
        return True

    def _tool_result(self, v: JSONObject, d: JSONObject, rec: Record) -> bool:
        em, call_id = self.em, nonempty(d.get("toolCallId"))
        if call_id is None:
            return False
        result, error = obj(d.get("result")), obj(d.get("error"))
        text = result.get("content") if result is not None else None
        if not isinstance(text, str) and error is not None:
            text = error.get("message")
        content: list[object] = [{"type": "text", "text": text}] if isinstance(text, str) else []
        binary = arr(result.get("binaryResultsForLlm")) if result is not None else None
        content.extend({"type": "image", "attachment": b} for b in binary or [])
        msg_id = em.message_id(nonempty(v.get("id")))
        em.tool_result(call_id, msg_id, content, d.get("success") is False, None)
        return True

    # -- turns and steps (§9.4) --------------------------------------------------------

    def _step_start(self, v: JSONObject, d: JSONObject, rec: Record) -> bool:
        em = self.em
        em.close_step()
        em.ensure_turn()
        em.opaque("copilot/assistant.turn_start", v, rec.size)
        em.open_step()
        return True

    def _step_end(self, v: JSONObject, d: JSONObject, rec: Record) -> bool:
        self.em.close_step()
        return False  # the record itself stays opaque, after the step's end

    def _abort(self, v: JSONObject, d: JSONObject, rec: Record) -> bool:
        if not self.em.turn:
            return False
        self.em.close_turn(_record_of(v, rec.size), aborted=True)
        return True

    def _lifecycle(self, v: JSONObject, d: JSONObject, rec: Record) -> bool:
        self.em.close_turn()  # a resume or shutdown ends what the last process left open
        return False

    # -- compaction, clearing, truncation (§9.5) ---------------------------------------

    def _span(self, last: int | None, whole: bool) -> list[int]:
        """The surface a compaction or clear replaces: from after the leading system
        messages through ``last`` (the whole surface when ``whole``)."""
        em = self.em
        lead = 0
        while lead < len(em.nodes) and em.kinds[em.nodes[lead]] == SYSTEM:
            lead += 1
        if whole or (last is not None and last not in em.kinds):
            end = len(em.nodes)
        else:
            end = 0 if last is None else em.nodes.index(last) + 1
        return em.nodes[lead:end] if end > lead else []

    def _compaction_start(self, v: JSONObject, d: JSONObject, rec: Record) -> bool:
        em = self.em
        marker = em.log("compaction/start", {"record": _record_of(v, rec.size)}, synthetic=True)
        self.started = _Started(marker, em.nodes[-1] if em.nodes else None)
        return True

    def _compaction_complete(self, v: JSONObject, d: JSONObject, rec: Record) -> bool:
        em, started = self.em, self.started
        self.started = None
        done = em.opaque("copilot/session.compaction_complete", v, rec.size)
        success, summary = d.get("success"), d.get("summaryContent")
        if success is False or (success is not True and not isinstance(summary, str)):
            return True  # a failed compaction changed nothing
        span = self._span(started.last if started else None, started is None)
        markers = [started.marker, done] if started is not None else [done]
        if not isinstance(summary, str):
            em.reason("compaction-without-summary")
            if span:
                em.placeholder(span, markers)
            return True
        em.reason("summary-wrapper")
        data: JSONObject = {
            "id": em.message_id(nonempty(v.get("id"))),
            "role": "user",
            "content": [{"type": "text", "text": summary}],
            "source": {"kind": "plugin", "plugin": PLUGIN, "compactSummary": True},
        }
        em.emit_surface("user/message", data, "summary", span=span, markers=markers)
        return True

    def _cleared(self, v: JSONObject, d: JSONObject, rec: Record) -> bool:
        em = self.em
        marker = em.opaque("copilot/session.context_cleared", v, rec.size)
        self.started = None  # what a compaction under way would replace is gone
        span = self._span(None, True)
        initial = d.get("initialMessage")
        if isinstance(initial, str):
            data: JSONObject = {
                "id": em.message_id(nonempty(v.get("id"))),
                "role": "user",
                "content": [{"type": "text", "text": initial}],
                "source": {"kind": "plugin", "plugin": PLUGIN, "contextCleared": True},
            }
            em.emit_surface("user/message", data, "plugin", span=span, markers=[marker])
        elif span:
            em.placeholder(span, [marker])
        return True

    def _truncation(self, v: JSONObject, d: JSONObject, rec: Record) -> bool:
        removed = d.get("messagesRemovedDuringTruncation")
        if type(removed) is int and removed > 0:
            self.em.reason("truncation")
        return False

    def _title(self, v: JSONObject, d: JSONObject, rec: Record) -> bool:
        title = d.get("title")
        if not isinstance(title, str):
            return False
        source: JSONObject = {"kind": "provider", "provider": PROVIDER}
        return self.em.native_title(2, title, source, _record_of(v, rec.size))

    def finish(self, titles: list[tuple[str, int, str, str, int | None]]) -> None:
        """End of file: closers, then the workspace titles as (file, line, key, title, time)
        in rising rank."""
        em = self.em
        em.finish()
        for file, line, key, title, time in titles:
            em.begin(line, time, file=file)
            if key == "name":
                em.native_title(3, title, {"kind": "user"}, {key: title})
            else:
                em.native_title(2, title, {"kind": "provider", "provider": PROVIDER}, {key: title})

    # The mapped record kinds (§9.3); a handler returning False leaves its record opaque.
    HANDLERS: ClassVar[
        dict[str, Callable[[CopilotMapper, JSONObject, JSONObject, Record], bool]]
    ] = {
        "user.message": _user,
        "system.message": _system,
        "assistant.message": _assistant,
        "tool.execution_complete": _tool_result,
        "assistant.turn_start": _step_start,
        "assistant.turn_end": _step_end,
        "abort": _abort,
        "session.resume": _lifecycle,
        "session.shutdown": _lifecycle,
        "session.compaction_start": _compaction_start,
        "session.compaction_complete": _compaction_complete,
        "session.context_cleared": _cleared,
        "session.truncation": _truncation,
        "session.title_changed": _title,
    }


# The record kinds that name the current model, and the field that does (§9.3).
_MODEL_KEYS = {
    "session.start": "selectedModel",
    "session.resume": "selectedModel",
    "session.model_change": "newModel",
    "assistant.turn_start": "model",
}
