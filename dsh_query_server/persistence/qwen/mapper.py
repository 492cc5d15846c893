"""Qwen Code chat records -> dsh events (importers.md §10.3–§10.5): one forward pass that keeps,
per record, the context Qwen Code would rebuild from it (branches.py), so rewinds, compressions
and slash-command results shadow exactly what Qwen Code drops."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..importing.emitter import OPAQUE_LIMIT, Emitter, JSONObject, scalar_record
from ..importing.lines import BadSegment, Item, Record
from ..importing.values import arr, json_equal, nonempty, obj, parse_time
from .branches import Node, Surface
from .parts import Piece, map_parts, split_user, texts_of

PLUGIN = "qwen-code"
RECORD_TYPES = ("user", "assistant", "tool_result", "system")
# records Qwen Code keeps out of the parentUuid tree (transcript-records.ts)
NON_CONVERSATION = frozenset(
    {
        "session_artifact_event",
        "session_artifact_snapshot",
        "session_sources_snapshot",
        "managed_session_header_v1",
        "managed_session_event_v1",
        "managed_session_commit_v1",
    }
)
OFF_CONTEXT = frozenset({"realtime_message", "code_mode_tool_result"})  # never sent to the model
TURN_INPUTS = frozenset({"cron", "notification"})  # user-role inputs that start a model turn


@dataclass(frozen=True, slots=True)
class _Material:
    """The last record whose message entered the context (Qwen Code's ``lastMaterialRecord``):
    whether it was a user record, its text when it is a bare one-text prompt (a slash command's
    result may take it back), and the context before it."""

    user: bool
    text: str | None
    before: Node | None


@dataclass(frozen=True, slots=True)
class _Point:
    """What a record leaves: the context after it and the last material record on its chain."""

    node: Node | None
    material: _Material | None


_ROOT = _Point(None, None)


def _name(kind: object, subtype: object) -> str:
    base = f"qwen/{kind}" if isinstance(kind, str) and kind else "qwen/record"
    return f"{base}/{subtype}" if isinstance(subtype, str) and subtype else base


def subtype_of(v: JSONObject) -> str | None:
    """A record's subtype; Qwen Code drops one that is not a string (validateTranscriptRecord)."""
    subtype = v.get("subtype")
    return subtype if isinstance(subtype, str) else None


def _record_of(v: JSONObject, size: int) -> JSONObject:
    return scalar_record(v) if size > OPAQUE_LIMIT else v


def _bare_text(v: JSONObject, message: JSONObject, parts: list[object]) -> str | None:
    """A prompt whose message is exactly one ``{text}`` part: its text."""
    if v.get("type") != "user" or subtype_of(v) is not None or message.get("role") != "user":
        return None
    only = obj(parts[0]) if len(parts) == 1 else None
    if only is None or list(only) != ["text"] or not isinstance(only["text"], str):
        return None
    return str(only["text"])


def _pops(payload: JSONObject | None, material: _Material | None) -> bool:
    """Qwen Code drops a local slash command's echoed input from model history when its result
    was shown as assistant output and never sent (session-api-history.ts)."""
    if payload is None or material is None or material.text is None:
        return False
    items = arr(payload.get("outputHistoryItems"))
    return (
        payload.get("phase") == "result"
        and payload.get("sentToModel") is not True
        and bool(items)
        and all((obj(i) or {}).get("type") == "assistant" for i in items or [])
        and payload.get("rawCommand") == material.text
    )


@dataclass(slots=True)
class QwenMapper:
    em: Emitter
    copied: bool  # a /branch fork: records carrying forkedFrom are the seed
    surface: Surface = field(init=False)
    points: dict[str, _Point] = field(default_factory=dict[str, _Point])
    tail: str | None = None  # the last conversation record: Qwen Code's leaf
    provider: str = "unknown"
    step_key: object = None
    in_seed: bool = False
    launch: bool = False  # a bootstrap was read: the next prompt is the sub-agent's task
    last_title: tuple[str, str] | None = None
    bridged: set[str] = field(default_factory=set[str])  # parents read as lost (§10.4)

    def __post_init__(self) -> None:
        self.surface = Surface(self.em)
        self.in_seed = self.copied

    def feed(self, item: Item) -> None:
        if isinstance(item, BadSegment):
            self.em.bad_line(item.line, item.offset, item.length, item.preview)
            return
        self.record(item)

    def record(self, rec: Record) -> None:
        v, em = rec.value, self.em
        em.begin(rec.line, parse_time(v.get("timestamp")))
        kind, subtype = v.get("type"), subtype_of(v)
        uuid, parent = nonempty(v.get("uuid")), v.get("parentUuid")
        if (
            uuid is None
            or not (parent is None or isinstance(parent, str))
            or nonempty(v.get("sessionId")) is None
            or kind not in RECORD_TYPES
            or subtype in NON_CONVERSATION
        ):
            em.opaque(_name(kind, v.get("subtype")), v, rec.size)
            return
        if uuid in self.bridged:
            em.reason("late-parent")
        launch = self.launch and kind == "user" and subtype is None
        if self.in_seed and "forkedFrom" not in v and not launch:
            self.in_seed = False
            em.end_seed()
        point = self._base(uuid, parent or None, kind == "system" and subtype == "rewind")
        if kind == "system":
            material = self._system(rec, v, point)
        else:
            material = self._message(rec, v, point, launch)
        self.points[uuid] = _Point(self.surface.cur, material)
        self.tail = uuid

    def _base(self, uuid: str, parent: str | None, rewind: bool) -> _Point:
        """The record's parent context: a repeated uuid continues that record (Qwen Code merges
        such fragments); a missing parent is bridged onto the current leaf, as Qwen Code's
        resume bridges a lost segment, except that a rewind then starts a new root."""
        if uuid in self.points:
            if uuid != self.tail:
                self.em.reason("split-record")
            return self.points[uuid]
        if parent is None:
            return _ROOT
        if parent in self.points:
            return self.points[parent]
        self.bridged.add(parent)
        if rewind or self.tail is None:
            return _ROOT
        return self.points[self.tail]

    # -- system records ----------------------------------------------------------------

    def _system(self, rec: Record, v: JSONObject, point: _Point) -> _Material | None:
        em, subtype = self.em, subtype_of(v)
        payload = obj(v.get("systemPayload"))
        if subtype == "chat_compression" and payload is not None:
            history = arr(payload.get("compressedHistory"))
            if history is not None:
                record: JSONObject = {"record": _record_of(v, rec.size)}
                marker = em.log("compaction/start", record, synthetic=True)
                self._replace_all(history, marker, nonempty(v.get("uuid")), subtype)
                return None
        if subtype == "agent_bootstrap" and payload is not None:
            history = arr(payload.get("history"))
            if history is not None:
                marker = em.opaque(_name("system", subtype), v, rec.size)
                self._replace_all(history, marker, nonempty(v.get("uuid")), subtype)
                self.in_seed = self.launch = True
                return None
        if subtype == "custom_title" and payload is not None and self._title(v, payload):
            self.surface.retarget(point.node, [])
            return point.material
        if subtype == "session_model" and payload is not None:
            self.provider = nonempty(payload.get("authType")) or self.provider
        marker = em.opaque(_name("system", subtype), v, rec.size)
        self.surface.retarget(point.node, [marker])
        material = point.material
        if subtype == "slash_command" and material is not None:
            if _pops(payload, material):
                self.surface.retarget(material.before, [marker])
                return None
            return None if material.user else material
        return material

    def _title(self, v: JSONObject, payload: JSONObject) -> bool:
        """A ``custom_title`` record as a title event when it changes the title (Qwen Code
        re-appends the same title every 32 KiB so that its list finds it near the end)."""
        title = payload.get("customTitle")
        if not isinstance(title, str):
            return False
        auto = payload.get("titleSource") == "auto"
        if self.last_title == (title, "auto" if auto else "manual"):
            return False
        source: JSONObject = (
            {"kind": "provider", "provider": self.provider} if auto else {"kind": "user"}
        )
        if not self.em.native_title(1, title, source, v):
            return False
        self.last_title = (title, "auto" if auto else "manual")
        return True

    # -- message records ---------------------------------------------------------------

    def _message(self, rec: Record, v: JSONObject, point: _Point, launch: bool) -> _Material | None:
        em, kind, subtype = self.em, str(v.get("type")), subtype_of(v)
        message = obj(v.get("message"))
        if launch:
            self.launch = False  # the task prompt already ends the bootstrap history
        if message is None or subtype in OFF_CONTEXT or launch:
            em.opaque(_name(kind, subtype), v, rec.size)
            self.surface.retarget(point.node, [])
            return point.material
        self.surface.retarget(point.node, [])
        parts = arr(message.get("parts")) or []
        before = self.surface.cur
        uuid = nonempty(v.get("uuid"))
        if kind == "assistant":
            self._assistant(v, uuid, parts)
        else:
            self._user(v, kind, subtype, uuid, parts)
        return _Material(kind == "user", _bare_text(v, message, parts), before)

    def _assistant(self, v: JSONObject, uuid: str | None, parts: list[object]) -> None:
        em = self.em
        run, rnd = v.get("agentRunId"), v.get("agentRound")
        key: object = (run, rnd) if type(rnd) is int else uuid
        if not em.step or key != self.step_key:
            em.open_step()
            self.step_key = key
        blocks = map_parts(parts)
        data: JSONObject = {
            "turn": em.turn,
            "step": em.step,
            "message": self.model_message(em.message_id(uuid), blocks, v.get("model")),
        }
        if "usageMetadata" in v:
            data["usage"] = v["usageMetadata"]
        window = v.get("contextWindowSize")
        if type(window) is int:
            data["contextWindow"] = window
        self.surface.emit("assistant/message", data, "model")
        for block in blocks:
            b = obj(block)
            if b is not None and b.get("type") == "tool-call":
                em.tool_call(str(b["id"]), str(b["name"]), str(b["arguments"]))

    def model_message(self, msg_id: str, blocks: list[object], model: object) -> JSONObject:
        return {
            "id": msg_id,
            "role": "assistant",
            "content": blocks,
            "source": {
                "kind": "model",
                "provider": self.provider,
                "model": nonempty(model) or "unknown",
            },
        }

    def _user(
        self, v: JSONObject, kind: str, subtype: str | None, uuid: str | None, parts: list[object]
    ) -> None:
        em = self.em
        pieces = split_user(parts)
        plain = all(p.call_id is None for p in pieces)
        if kind == "user" and plain and (subtype is None or subtype in TURN_INPUTS):
            em.open_turn()
            source: JSONObject = {"kind": "user"}
            if subtype is not None:
                source = {"kind": "plugin", "plugin": PLUGIN, "subtype": subtype}
            blocks = pieces[0].blocks if len(pieces) == 1 else map_parts(parts)
            data: JSONObject = {
                "id": em.message_id(uuid),
                "role": "user",
                "content": blocks,
                "source": source,
            }
            seq = self.surface.emit("user/message", data, "user")
            if subtype is None:
                payload = obj(v.get("systemPayload")) or {}
                shown = payload.get("displayText")
                em.fallback(seq, [shown] if isinstance(shown, str) else texts_of(parts))
            return
        em.close_step()
        meta: JSONObject | None = (
            {"toolCallResult": v["toolCallResult"]} if "toolCallResult" in v else None
        )
        for piece in pieces:
            if piece.call_id is None:
                self._plugin_message(uuid, piece.blocks, subtype)
                continue
            self.surface.before_result()
            seq = em.tool_result(
                piece.call_id, em.message_id(uuid), piece.blocks, piece.is_error, meta
            )
            self.surface.result(seq)
            meta = None

    def _plugin_message(self, uuid: str | None, blocks: list[object], subtype: str | None) -> int:
        source: JSONObject = {"kind": "plugin", "plugin": PLUGIN}
        if subtype is not None:
            source["subtype"] = subtype
        data: JSONObject = {
            "id": self.em.message_id(uuid),
            "role": "user",
            "content": blocks,
            "source": source,
        }
        return self.surface.emit("user/message", data, "plugin")

    # -- compression and bootstrap histories (§10.4) -----------------------------------

    def _replace_all(
        self, history: list[object], marker: int, uuid: str | None, origin: str
    ) -> None:
        """The context becomes ``history`` (Content items): the first item replaces the whole
        surface, later ones append, citing the replaced event they repeat (Codex's rule,
        importers.md §2.4); an empty history leaves a placeholder."""
        em, surface = self.em, self.surface
        owed = em.pending
        em.pending = None
        span = list(em.nodes)
        surface.cur = None
        markers = (owed[1] if owed is not None else []) + [marker]
        replaced = [(s, str(em.events[s].type), obj(em.data_of(s)) or {}) for s in span]
        replay = _Replay(self, origin, span, markers, replaced)
        for item in history:
            d = obj(item)
            if d is None:
                continue
            parts = arr(d.get("parts")) or []
            if d.get("role") == "model":
                replay.model(uuid, map_parts(parts))
            else:
                for piece in split_user(parts):
                    replay.user(uuid, piece)
        if not replay.started and span:
            surface.placeholder(span, markers)

    def finish(self) -> None:
        em = self.em
        em.finish()
        if em.pending is not None:
            em.placeholder(eof=True)


@dataclass(slots=True)
class _Replay:
    """A history being mapped over the surface it replaces."""

    mapper: QwenMapper
    origin: str  # the subtype of the record carrying the history
    span: list[int]
    markers: list[int]
    replaced: list[tuple[int, str, JSONObject]]
    started: bool = False

    def _first(self) -> tuple[list[int] | None, list[int] | None, bool]:
        if self.started:
            return None, None, False
        self.started = True
        return self.span, self.markers, True

    def _copy_of(self, etype: str, content: object) -> tuple[int, JSONObject] | None:
        for seq, kind, data in reversed(self.replaced):
            message = data if kind == "user/message" else obj(data.get("message")) or {}
            if kind == etype and json_equal(message.get("content"), content):
                return seq, data
        return None

    def model(self, uuid: str | None, blocks: list[object]) -> None:
        m = self.mapper
        em = m.em
        data: JSONObject = {
            "turn": em.turns,
            "step": 0,
            "message": m.model_message(em.message_id(uuid), blocks, None),
        }
        copy = self._copy_of("assistant/message", blocks)
        if copy is not None:
            message = obj(copy[1].get("message")) or {}
            data["message"]["source"] = message.get("source")  # type: ignore[index]
        self._emit("assistant/message", data, copy)

    def user(self, uuid: str | None, piece: Piece) -> None:
        m = self.mapper
        em, surface = m.em, m.surface
        if piece.call_id is not None:
            span, markers, first = self._first()
            if first and span:
                surface.placeholder(span, markers)
                markers = None
            block: JSONObject = {
                "type": "tool-result",
                "toolCallId": piece.call_id,
                "content": piece.blocks,
            }
            if piece.is_error:
                block["isError"] = True
            copy = None if first else self._copy_of("tool/result", [block])
            extra = [copy[0]] if copy is not None else None
            seq = em.tool_result(
                piece.call_id,
                em.message_id(uuid),
                piece.blocks,
                piece.is_error,
                None,
                replay=True,
                extra_src=extra,
                markers=markers if first else None,
            )
            surface.result(seq)
            return
        copy = self._copy_of("user/message", piece.blocks)
        source: JSONObject = {"kind": "plugin", "plugin": PLUGIN, "history": self.origin}
        if copy is not None and obj(copy[1].get("source")) is not None:
            source = obj(copy[1]["source"]) or source
        data: JSONObject = {
            "id": em.message_id(uuid),
            "role": "user",
            "content": piece.blocks,
            "source": source,
        }
        self._emit("user/message", data, copy)

    def _emit(self, etype: str, data: JSONObject, copy: tuple[int, JSONObject] | None) -> None:
        span, markers, first = self._first()
        extra = [copy[0]] if copy is not None and not first else None
        tag = "user" if etype == "user/message" else "model"
        self.mapper.surface.emit(etype, data, tag, span=span, markers=markers, extra_src=extra)
