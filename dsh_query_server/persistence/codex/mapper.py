"""Codex rollout lines -> dsh events (importers.md §2.3–§2.4), replaying compactions, rollbacks
and fork seeds the way Codex rebuilds its own history."""

from __future__ import annotations

from dataclasses import dataclass, field

from ... import jsoncodec
from ..importing.emitter import OPAQUE_LIMIT, Emitter, JSONObject, scalar_record
from ..importing.lines import BadSegment, Item, Record
from ..importing.values import (
    arr,
    content_of,
    json_equal,
    nonempty,
    obj,
    parse_time,
    text_blocks,
    uuid7_ms,
)

PLUGIN = "codex"
_CONTEXT = (
    "<environment_context>",
    "# agents.md instructions",
    "<user_instructions>",
    "<turn_aborted>",
    "<context_update>",
    "<skill>",
    "<skills_instructions>",
    "<user_shell_command>",
    "<subagent_notification>",
)
_CALLS = ("function_call", "custom_tool_call", "local_shell_call")
_OUTPUTS = ("function_call_output", "custom_tool_call_output")
_MODEL_ITEMS = ("web_search_call", "image_generation_call")


def map_part(part: object) -> object:
    p = obj(part)
    if p is None:
        return part
    kind = p.get("type")
    if kind in ("input_text", "output_text") and isinstance(p.get("text"), str):
        return {"type": "text", "text": p["text"]}
    if kind == "input_image" and "image_url" in p:
        return {"type": "image", "attachment": {"image_url": p["image_url"]}}
    return p


def _parts(content: object) -> list[object]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [map_part(p) for p in arr(content) or []]


def is_contextual(blocks: list[object]) -> bool:
    return any(t.lstrip().lower().startswith(_CONTEXT) for t in text_blocks(blocks))


def _record_of(v: JSONObject, size: int) -> JSONObject:
    return scalar_record(v) if size > OPAQUE_LIMIT else v


@dataclass(slots=True)
class _Replay:
    """A replacement history being mapped: the replaced surface, its markers, and which of its
    events later items may cite as copies."""

    span: list[int]
    markers: list[int]
    replaced: list[tuple[int, str, object]]
    started: bool = False


@dataclass(slots=True)
class CodexMapper:
    em: Emitter
    own_id: str
    forked: bool
    bare: bool
    provider: str = "openai"
    model: str | None = None
    count: int = 0
    in_seed: bool = False
    replay: _Replay | None = None
    records: int = field(default=0)

    def feed(self, item: Item) -> None:
        if isinstance(item, BadSegment):
            self.em.bad_line(item.line, item.offset, item.length, item.preview)
            return
        self.record(item)

    def record(self, rec: Record) -> None:
        v, em = rec.value, self.em
        em.begin(rec.line, parse_time(v.get("timestamp")))
        self.count += 1
        kind, payload = v.get("type"), obj(v.get("payload"))
        if self.in_seed and self._is_boundary(kind, payload):
            self.in_seed = False
            em.end_seed()
        if (
            self.count == 2
            and self.forked
            and kind == "session_meta"
            and payload is not None
            and payload.get("id") != self.own_id
        ):
            self.in_seed = True
        if self.bare and "type" not in v and "record_type" not in v and self.count == 1:
            em.opaque("codex/session_meta", v, rec.size)
        elif self.bare and kind is not None and "payload" not in v:
            if not self._item(v, rec):
                em.opaque(f"codex/item/{kind}", v, rec.size)
        elif kind == "session_meta" and payload is not None:
            provider = nonempty(payload.get("model_provider"))
            self.provider = provider or self.provider
            if payload.get("history_mode") == "paginated":
                em.reason("paginated")
            em.opaque("codex/session_meta", v, rec.size)
        elif kind == "turn_context" and payload is not None:
            self.model = nonempty(payload.get("model")) or self.model
            em.opaque("codex/turn_context", v, rec.size)
        elif kind == "response_item" and payload is not None:
            if not self._item(payload, rec):
                em.opaque(f"codex/item/{payload.get('type')}", v, rec.size)
        elif kind == "event_msg" and payload is not None:
            self._event(v, payload, rec)
        elif kind == "compacted" and payload is not None:
            self._compacted(v, payload, rec)
        elif "record_type" in v:
            em.opaque(f"codex/{v.get('record_type')}", v, rec.size)
        else:
            em.opaque(f"codex/{kind if isinstance(kind, str) else 'record'}", v, rec.size)

    def _is_boundary(self, kind: object, payload: JSONObject | None) -> bool:
        if payload is None:
            return False
        if kind == "session_meta":
            return payload.get("id") == self.own_id
        if kind == "turn_context" or (
            kind == "event_msg" and payload.get("type") == "task_started"
        ):
            ms = uuid7_ms(payload.get("turn_id"))
            return ms is not None and ms >= self.em.created_at
        return False

    # -- surface emission --------------------------------------------------------------

    def _surface(self, etype: str, data: JSONObject, tag: str) -> int:
        em, rp = self.em, self.replay
        if rp is None:
            return em.emit_surface(etype, data, tag)
        if not rp.started:
            rp.started = True
            return em.emit_surface(etype, data, tag, span=rp.span, markers=rp.markers)
        return em.emit_surface(etype, data, tag, extra_src=self._copy_of(etype, data))

    def _copy_of(self, etype: str, data: JSONObject) -> list[int]:
        rp = self.replay
        if rp is None:
            return []
        content = _content(etype, data)
        for seq, kind, old in reversed(rp.replaced):
            if kind == etype and json_equal(old, content):
                return [seq]
        return []

    def _user(self, p: JSONObject) -> None:
        em, blocks = self.em, _parts(p.get("content"))
        role = p.get("role")
        if role == "user" and not is_contextual(blocks):
            source: JSONObject = {"kind": "user"}
            tag = "user"
            if self.replay is None:
                if em.turn and em.turn_native:
                    em.close_step()
                else:
                    em.open_turn()
        else:
            source = {"kind": "plugin", "plugin": PLUGIN}
            if role == "user":
                source["context"], tag = True, "context"
            else:
                source["role"], tag = role, "role"
            if self.replay is None:
                em.close_step()
        data: JSONObject = {
            "id": em.message_id(nonempty(p.get("id"))),
            "role": "user",
            "content": blocks,
            "source": source,
        }
        seq = self._surface("user/message", data, tag)
        if tag == "user" and self.replay is None:
            em.fallback(seq, text_blocks(blocks))

    def _assistant(
        self, p: JSONObject, blocks: list[object], replay_state: JSONObject | None = None
    ) -> None:
        em = self.em
        if self.replay is None and not em.step:
            em.open_step()
        message: JSONObject = {
            "id": em.message_id(nonempty(p.get("id"))),
            "role": "assistant",
            "content": blocks,
            "source": {
                "kind": "model",
                "provider": self.provider,
                "model": self.model or "unknown",
            },
        }
        if replay_state is not None:
            message["source"] = {**message["source"], "replayState": replay_state}  # type: ignore[dict-item]
        data: JSONObject = {
            "turn": em.turns if self.replay else em.turn,
            "step": 0 if self.replay else em.step,
            "message": message,
        }
        self._surface("assistant/message", data, "model")

    def _item(self, p: JSONObject, rec: Record) -> bool:
        """One response item; False when it stays opaque."""
        kind = p.get("type")
        if kind == "message" and isinstance(p.get("role"), str):
            if p["role"] == "assistant":
                self._assistant(p, _parts(p.get("content")))
            elif content_of(p.get("content")) is not None:
                self._user(p)
            else:
                return False
        elif kind == "reasoning":
            blocks: list[object] = []
            for key in ("summary", "content"):
                for part in arr(p.get(key)) or []:
                    d = obj(part)
                    if d is not None and isinstance(d.get("text"), str):
                        blocks.append({"type": "reasoning", "text": d["text"]})
            enc = p.get("encrypted_content")
            self._assistant(p, blocks, {"encrypted_content": enc} if enc is not None else None)
        elif kind in _CALLS:
            return self._call(p, str(kind))
        elif kind in _OUTPUTS:
            return self._output(p)
        elif kind in ("compaction", "context_compaction"):
            self._assistant(p, [], {"encrypted_content": p.get("encrypted_content")})
        elif kind in _MODEL_ITEMS:
            self._assistant(p, [p])
        else:
            return False
        return True

    def _call(self, p: JSONObject, kind: str) -> bool:
        call_id = nonempty(p.get("call_id"))
        if kind == "local_shell_call":
            name: object = "local_shell"
            args: object = jsoncodec.dumps(p.get("action")).decode("utf-8")
        else:
            name = p.get("name")
            args = p.get("arguments") if kind == "function_call" else p.get("input")
        if call_id is None or not isinstance(name, str) or not isinstance(args, str):
            return False
        block: JSONObject = {"type": "tool-call", "id": call_id, "name": name, "arguments": args}
        self._assistant(p, [block])
        if self.replay is None:
            self.em.tool_call(call_id, name, args)
        return True

    def _output(self, p: JSONObject) -> bool:
        em, call_id = self.em, nonempty(p.get("call_id"))
        output = p.get("output")
        is_error = False
        inner = obj(output)
        if inner is not None:
            is_error = inner.get("success") is False
            output = inner.get("content")
        parts = content_of(output)
        if call_id is None or parts is None:
            return False
        content = _parts(parts)
        msg_id = em.message_id(nonempty(p.get("id")))
        rp = self.replay
        if rp is None:
            em.close_step()
            em.tool_result(call_id, msg_id, content, is_error, None)
        elif not rp.started:
            rp.started = True
            em.tool_result(
                call_id,
                msg_id,
                content,
                is_error,
                None,
                replay=True,
                span=rp.span,
                markers=rp.markers,
            )
        else:
            block: JSONObject = {"type": "tool-result", "toolCallId": call_id, "content": content}
            if is_error:
                block["isError"] = True
            copy = self._copy_of("tool/result", {"message": {"content": [block]}})
            em.tool_result(call_id, msg_id, content, is_error, None, replay=True, extra_src=copy)
        return True

    # -- event messages, compaction and rollback (§2.4) --------------------------------

    def _event(self, v: JSONObject, p: JSONObject, rec: Record) -> None:
        em, kind = self.em, p.get("type")
        if kind in ("task_started", "turn_started"):
            em.open_turn(record=_record_of(v, rec.size))
        elif kind in ("task_complete", "turn_complete", "turn_aborted") and em.turn:
            em.close_turn(_record_of(v, rec.size), aborted=kind == "turn_aborted")
        elif kind == "thread_rolled_back":
            marker = em.opaque("codex/event/thread_rolled_back", v, rec.size)
            n = p.get("num_turns")
            if type(n) is int and n >= 0:
                self._rollback(n, marker)
        else:
            em.opaque(f"codex/event/{kind}", v, rec.size)

    def _rollback(self, n: int, marker: int) -> None:
        em = self.em
        pending = em.pending
        base = em.nodes if pending is None else em.nodes[: em.nodes.index(pending[0][0])]
        users = [i for i, s in enumerate(base) if em.kinds[s] == "user"]
        if n == 0 or not users:
            return
        c = users[-n] if n <= len(users) else users[0]
        while c > users[0] and em.kinds[base[c - 1]] in ("context", "role"):
            c -= 1
        span = base[c:] + (pending[0] if pending is not None else [])
        em.pending = (span, (pending[1] if pending is not None else []) + [marker])

    def _compacted(self, v: JSONObject, p: JSONObject, rec: Record) -> None:
        em = self.em
        marker = em.log("compaction/start", {"record": _record_of(v, rec.size)}, synthetic=True)
        markers = (em.pending[1] if em.pending is not None else []) + [marker]
        em.pending = None
        span = list(em.nodes)
        history = arr(p.get("replacement_history"))
        if history is None:
            em.reason("legacy-compaction")
            text = p.get("message")
            data: JSONObject = {
                "id": em.message_id(None),
                "role": "user",
                "content": [{"type": "text", "text": text if isinstance(text, str) else ""}],
                "source": {"kind": "plugin", "plugin": PLUGIN, "compactSummary": True},
            }
            em.emit_surface("user/message", data, "plugin", span=span, markers=markers)
            return
        replaced = [
            (
                s,
                str(em.events[s].type),
                _content(str(em.events[s].type), obj(em.data_of(s)) or {}),
            )
            for s in span
        ]
        self.replay = _Replay(span, markers, replaced)
        try:
            for item in history:
                d = obj(item)
                if d is not None:
                    self._item(d, rec)
        finally:
            started = self.replay.started
            self.replay = None
        if not started:
            em.placeholder(span, markers)

    def finish(self, title: tuple[int, str, JSONObject, int | None] | None) -> None:
        """End of file: closers, a rollback still pending, then the index title."""
        em = self.em
        em.finish()
        if em.pending is not None:
            em.placeholder(eof=True)
        if title is not None:
            line, name, entry, time = title
            em.begin(line, time, file="session_index.jsonl")
            em.native_title(3, name, {"kind": "user"}, entry)


def _content(etype: str, data: JSONObject) -> object:
    if etype == "user/message":
        return data.get("content")
    message = obj(data.get("message"))
    return message.get("content") if message is not None else None
