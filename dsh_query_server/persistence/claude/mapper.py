"""Claude Code records -> dsh events (importers.md §1.3–§1.4): the single forward pass."""

from __future__ import annotations

from dataclasses import dataclass, field

from ... import jsoncodec
from ..importing.emitter import Emitter, JSONObject
from ..importing.lines import BadSegment, Item, Record
from ..importing.values import arr, content_of, nonempty, obj, parse_time, text_blocks, text_of

PLUGIN = "claude-code"
_INTERRUPTED = "[Request interrupted by user"
_OPAQUE_REASONS = {"content-replacement": "content-replacement", "attachment": "attachments"}


@dataclass(slots=True)
class _Node:
    parent: str | None
    seqs: list[int]


@dataclass(slots=True)
class _Boundary:
    marker: int
    preserved: list[str] | None  # uuids of preserved records, in file order


def _text_block(text: str) -> JSONObject:
    return {"type": "text", "text": text}


def map_block(block: object) -> object:
    """One native content block as a dsh block (§1.3's block table)."""
    b = obj(block)
    if b is None:
        return block
    kind = b.get("type")
    if kind == "text" and isinstance(b.get("text"), str):
        return _text_block(str(b["text"]))
    if kind == "thinking" and isinstance(b.get("thinking"), str):
        out: JSONObject = {"type": "reasoning", "text": b["thinking"]}
        if "signature" in b:
            out["signature"] = b["signature"]
        return out
    if kind == "tool_use" and nonempty(b.get("id")) and isinstance(b.get("name"), str):
        args = b.get("input")
        text = args if isinstance(args, str) else jsoncodec.dumps(args).decode("utf-8")
        return {"type": "tool-call", "id": b["id"], "name": b["name"], "arguments": text}
    if kind == "image" and "source" in b:
        return {"type": "image", "attachment": b["source"]}
    return b


def map_content(content: object) -> list[object]:
    if isinstance(content, str):
        return [_text_block(content)]
    return [map_block(b) for b in arr(content) or []]


def _is_interruption(blocks: list[object]) -> bool:
    texts = text_blocks(blocks)
    return bool(blocks) and len(texts) == len(blocks) and texts[0].startswith(_INTERRUPTED)


def _is_result(block: object) -> bool:
    b = obj(block)
    return b is not None and b.get("type") == "tool_result"


@dataclass(slots=True)
class ClaudeMapper:
    em: Emitter
    trunk: bool
    own_id: str
    copied: bool
    nodes: dict[str, _Node] = field(default_factory=dict[str, _Node])
    order: list[str] = field(default_factory=list[str])
    boundary: _Boundary | None = None
    step_key: str | None = None
    seeded: bool = False

    def feed(self, item: Item) -> None:
        if isinstance(item, BadSegment):
            self.em.bad_line(item.line, item.offset, item.length, item.preview)
            return
        self.record(item)

    def record(self, rec: Record) -> None:
        v, em = rec.value, self.em
        em.begin(rec.line, parse_time(v.get("timestamp")))
        if (
            self.copied
            and not self.seeded
            and v.get("sessionId") == self.own_id
            and "forkedFrom" not in v
        ):
            self.seeded = True
            em.end_seed()
        uuid = nonempty(v.get("uuid"))
        if uuid is not None and uuid in self.nodes:
            em.opaque("claude/duplicate", v, rec.size)
            return
        first = em.seq
        self._dispatch(rec, v)
        if uuid is not None:
            seqs = [s for s in range(first, em.seq) if s in em.kinds or s in em.shadowed]
            self.nodes[uuid] = _Node(nonempty(v.get("parentUuid")), seqs)
            self.order.append(uuid)

    def _dispatch(self, rec: Record, v: JSONObject) -> None:
        em, kind = self.em, v.get("type")
        if self.trunk and v.get("isSidechain") is True:
            em.reason("inline-sidechain")
            em.opaque("claude/sidechain", v, rec.size)
        elif kind == "user" and self._user(v):
            return
        elif kind == "assistant" and self._assistant(v):
            return
        elif kind == "system":
            self._system(rec, v)
        elif kind in ("custom-title", "ai-title", "summary") and self._title(v, str(kind)):
            return
        else:
            if isinstance(kind, str) and kind in _OPAQUE_REASONS:
                em.reason(_OPAQUE_REASONS[kind])
            em.opaque(f"claude/{kind if isinstance(kind, str) else 'record'}", v, rec.size)

    # -- user records ------------------------------------------------------------------

    def _user(self, v: JSONObject) -> bool:
        message = obj(v.get("message"))
        content = content_of(message.get("content")) if message is not None else None
        if content is None:
            return False
        blocks = map_content(content)
        raw = arr(content)
        if raw is not None and any(_is_result(b) for b in raw):
            self._results(v, raw)
        elif v.get("isMeta") is True:
            self._plugin_message(v, blocks, {"meta": True})
        elif v.get("isCompactSummary") is True:
            self._summary(v, blocks)
        elif _is_interruption(blocks):
            self._plugin_message(v, blocks, {"interruption": True})
            if self.em.turn:
                self.em.interrupted = True
        else:
            self._prompt(v, blocks)
        return True

    def _plugin_message(
        self,
        v: JSONObject,
        blocks: list[object],
        flags: JSONObject,
        *,
        span: list[int] | None = None,
        markers: list[int] | None = None,
    ) -> int:
        source: JSONObject = {"kind": "plugin", "plugin": PLUGIN, **flags}
        data: JSONObject = {
            "id": self.em.message_id(nonempty(v.get("uuid"))),
            "role": "user",
            "content": blocks,
            "source": source,
        }
        return self.em.emit_surface("user/message", data, "plugin", span=span, markers=markers)

    def _prompt(self, v: JSONObject, blocks: list[object]) -> None:
        em = self.em
        span = self._rewind(nonempty(v.get("parentUuid")))
        em.open_turn()
        data: JSONObject = {
            "id": em.message_id(nonempty(v.get("uuid"))),
            "role": "user",
            "content": blocks,
            "source": {"kind": "user"},
        }
        seq = em.emit_surface("user/message", data, "user", span=span)
        em.fallback(seq, text_blocks(blocks))

    def _rewind(self, parent: str | None) -> list[int] | None:
        """§1.4: the abandoned branch after the prompt's nearest current ancestor, or None."""
        em, seen, cur, last = self.em, set[str](), parent, None
        while cur is not None and cur in self.nodes and cur not in seen:
            seen.add(cur)
            node = self.nodes[cur]
            if node.seqs:
                if node.seqs[-1] in em.shadowed:
                    em.reason("branch-reentry")
                else:
                    last = node.seqs[-1]
                    break
            cur = node.parent
        if last is None or last == em.nodes[-1]:
            return None
        return em.nodes[em.nodes.index(last) + 1 :]

    def _results(self, v: JSONObject, raw: list[object]) -> None:
        em, run, meta_done = self.em, list[object](), False
        use_result = v.get("toolUseResult", None) if "toolUseResult" in v else None

        def flush() -> None:
            if run:
                self._plugin_message(v, list(run), {})
                run.clear()

        for block in raw:
            b = obj(block)
            call_id = nonempty(b.get("tool_use_id")) if b is not None and _is_result(b) else None
            if b is None or call_id is None:
                run.append(map_block(block))
                continue
            flush()
            inner = b.get("content")
            inner_content = content_of(inner)
            content = map_content(inner_content) if inner_content is not None else []
            meta: JSONObject | None = None
            if not meta_done and "toolUseResult" in v:
                meta = {"toolUseResult": use_result}
            meta_done = True
            em.tool_result(
                call_id,
                em.message_id(nonempty(v.get("uuid"))),
                content,
                b.get("is_error") is True,
                meta,
            )
        flush()

    # -- compaction (§1.4) -------------------------------------------------------------

    def _system(self, rec: Record, v: JSONObject) -> None:
        em, subtype = self.em, v.get("subtype")
        if subtype == "compact_boundary":
            if self.boundary is not None:
                em.reason("compaction-without-summary")
            marker = em.log("compaction/start", {"record": v}, synthetic=True)
            self.boundary = _Boundary(marker, self._preserved(obj(v.get("compactMetadata"))))
            return
        if subtype == "microcompact_boundary":
            em.reason("microcompact")
        name = f"claude/system/{subtype}" if isinstance(subtype, str) else "claude/system"
        em.opaque(name, v, rec.size)

    def _preserved(self, meta: JSONObject | None) -> list[str] | None:
        if meta is None:
            return None
        listed = obj(meta.get("preservedMessages"))
        uuids = arr(listed.get("uuids")) if listed is not None else None
        if uuids is not None:
            return [u for u in uuids if isinstance(u, str)]
        segment = obj(meta.get("preservedSegment"))
        if segment is None:
            return None
        head, tail = segment.get("headUuid"), segment.get("tailUuid")
        if not isinstance(head, str) or head not in self.order:
            return None
        out: list[str] = []
        for u in self.order[self.order.index(head) :]:
            out.append(u)
            if u == tail:
                break
        return out

    def _summary(self, v: JSONObject, blocks: list[object]) -> None:
        em, boundary = self.em, self.boundary
        self.boundary = None
        markers = [boundary.marker] if boundary is not None else []
        preserved_uuids = boundary.preserved if boundary is not None else None
        keep = {
            s
            for u in preserved_uuids or []
            if u in self.nodes
            for s in self.nodes[u].seqs
            if s in em.kinds
        }
        kept = [s for s in em.nodes if s in keep]
        suffix = bool(kept) and em.nodes[len(em.nodes) - len(kept) :] == kept
        span = em.nodes[: len(em.nodes) - len(kept)] if suffix else list(em.nodes)
        self._plugin_message(v, blocks, {"compactSummary": True}, span=span, markers=markers)
        if kept and not suffix:
            for original in kept:
                self._copy(original)

    def _copy(self, original: int) -> None:
        em = self.em
        event = em.events[original]
        data = obj(em.data_of(original)) or {}
        message = obj(data.get("message")) if event.type != "user/message" else data
        if message is None:
            return
        message["id"] = f"{message.get('id')}#copy"
        em.emit_surface(str(event.type), data, em.kinds.get(original, "copy"), extra_src=[original])

    # -- assistant records -------------------------------------------------------------

    def _assistant(self, v: JSONObject) -> bool:
        em = self.em
        message = obj(v.get("message"))
        content = content_of(message.get("content")) if message is not None else None
        if message is None or content is None:
            return False
        key = nonempty(message.get("id")) or nonempty(v.get("requestId")) or nonempty(v.get("uuid"))
        if not em.step or key != self.step_key:
            em.open_step()
            self.step_key = key
        blocks = map_content(content)
        model = nonempty(message.get("model")) or "unknown"
        data: JSONObject = {
            "turn": em.turn,
            "step": em.step,
            "message": {
                "id": em.message_id(nonempty(v.get("uuid"))),
                "role": "assistant",
                "content": blocks,
                "source": {"kind": "model", "provider": "anthropic", "model": model},
            },
        }
        if "usage" in message:
            data["usage"] = message["usage"]
        em.emit_surface("assistant/message", data, "model")
        for block in blocks:
            b = obj(block)
            if b is not None and b.get("type") == "tool-call":
                em.tool_call(str(b["id"]), str(b["name"]), str(b["arguments"]))
        return True

    # -- titles (§0.7) -----------------------------------------------------------------

    def _title(self, v: JSONObject, kind: str) -> bool:
        if kind == "custom-title":
            rank, text, source = 3, text_of(v.get("customTitle")), {"kind": "user"}
        elif kind == "ai-title":
            rank, text = 2, text_of(v.get("aiTitle"))
            source = {"kind": "provider", "provider": "anthropic"}
        else:
            leaf = nonempty(v.get("leafUuid"))
            rank, text = 1, text_of(v.get("summary")) if leaf in self.nodes else None
            source = {"kind": "provider", "provider": "anthropic"}
        return text is not None and self.em.native_title(rank, text, dict(source), v)

    def finish(self) -> None:
        if self.boundary is not None:
            self.em.reason("compaction-without-summary")
        self.em.finish()
