"""OpenCode messages and parts -> dsh events (importers.md §8.3–§8.5). Each message maps in store
order; a completed compaction, a prune and a pending revert then reshape the surface the way
OpenCode rebuilds the model's context, so the final surface is what its next request would send."""

from __future__ import annotations

from collections import deque

from ... import jsoncodec
from ...model.event import Event
from ..importing.emitter import JSONObject
from ..importing.values import arr, nonempty, obj
from .context import ABORTED_ERROR, Plan, error_of, plan, skipped
from .emitter import PLUGIN, OpenCodeEmitter
from .layout import is_default_title
from .rows import Damage, Message, Native, Part, ms

# The texts OpenCode sends in place of these parts (message-v2.ts ``toModelMessages``).
COMPACTION_PROMPT = "What did we do so far?"
SUBTASK_PROMPT = "The following tool was executed by the user"
CLEARED = "[Old tool result content cleared]"
_HIDDEN_FILES = ("text/plain", "application/x-directory")


def _text(value: str) -> JSONObject:
    return {"type": "text", "text": value}


def file_block(part: JSONObject) -> JSONObject | None:
    """A file part the model is sent: images as ``image`` blocks, others as ``file`` blocks."""
    mime, url = part.get("mime"), part.get("url")
    if not isinstance(mime, str) or not isinstance(url, str) or mime in _HIDDEN_FILES:
        return None
    attachment: JSONObject = {"url": url, "mime": mime}
    if isinstance(part.get("filename"), str):
        attachment["filename"] = part["filename"]
    if mime.startswith("image/"):
        return {"type": "image", "attachment": attachment}
    return {"type": "file", **attachment}


def _start(part: Part) -> int | None:
    """A part's own start time (text and reasoning ``time.start``, a tool's ``state.time``)."""
    if part.value is None:
        return None
    holder = obj(part.value.get("state")) if part.type == "tool" else part.value
    times = obj(holder.get("time")) if holder is not None else None
    return ms(times.get("start")) if times is not None else None


def _end(state: JSONObject) -> int | None:
    times = obj(state.get("time"))
    return ms(times.get("end")) if times is not None else None


def _steps(parts: list[Part]) -> list[tuple[Part | None, list[Part]]]:
    """Parts split where a ``step-start`` begins a model response (what the AI SDK's
    ``convertToModelMessages`` splits assistant messages at)."""
    out: list[tuple[Part | None, list[Part]]] = []
    for p in parts:
        if p.type == "step-start" or not out:
            out.append((p if p.type == "step-start" else None, []))
        if p.type != "step-start":
            out[-1][1].append(p)
    return out


def _result(state: JSONObject) -> tuple[list[object], bool] | None:
    """A tool part's result as the model gets it, or None while it has none."""
    status = state.get("status")
    if status == "completed" and isinstance(state.get("output"), str):
        content: list[object] = [_text(str(state["output"]))]
        for a in arr(state.get("attachments")) or []:
            attachment = obj(a)
            block = file_block(attachment) if attachment is not None else None
            if block is not None:
                content.append(block)
        return content, False
    if status == "error":
        meta = obj(state.get("metadata")) or {}
        if meta.get("interrupted") is True and isinstance(meta.get("output"), str):
            return [_text(str(meta["output"]))], False
        error = state.get("error")
        return [_text(error if isinstance(error, str) else "")], True
    return None


def _turn_error(error: JSONObject) -> JSONObject:
    data = obj(error.get("data")) or {}
    name = nonempty(error.get("name")) or "UnknownError"
    message = data.get("message")
    return {
        "kind": "error",
        "error": {"message": message if isinstance(message, str) else name, "code": name},
    }


class OpenCodeMapper:
    """One pass over a session's records; ``run`` returns its events and approximations."""

    def __init__(self, native: Native, created_at: int) -> None:
        self.native = native
        self.sid = native.session.id
        self.em = OpenCodeEmitter(PLUGIN, created_at)
        self.plan: Plan = plan(native.session, native.messages)
        self.owned: dict[str, list[int]] = {}  # message id -> its latest surface events
        self.owner: dict[int, str] = {}  # surface seq -> message id
        self.result_of: dict[str, int] = {}  # tool part id -> its latest tool/result
        self.part_of: dict[int, str] = {}  # tool/result seq -> tool part id
        self.markers: dict[str, int] = {}  # compaction request id -> its compaction/start
        self.prunes = deque(self.plan.prunes)
        self.cleared: dict[str, int] = {}  # tool part id -> the prune marker that cleared it
        self.blank: set[int] = set()  # tool/results whose content is the cleared text

    def run(self) -> tuple[list[Event], list[str]]:
        em, session = self.em, self.native.session
        em.locate(session.created, session=self.sid)
        em.opaque("opencode/session", session.record, len(jsoncodec.dumps(session.record)))
        for m in self.native.messages:
            if m.time is not None:  # a message without a time leaves prunes where they are
                self._prune(m.time)
            self._message(m)
        self._prune(None)
        em.finish()
        self._reconcile()
        title = session.title
        if title and not is_default_title(title):
            em.locate(session.updated, session=self.sid)
            em.native_title(3, title, {"kind": "provider", "provider": PLUGIN}, {"title": title})
        return em.events, em.reasons

    # -- bookkeeping -------------------------------------------------------------------

    def _own(self, message: str, seq: int) -> None:
        self.owned.setdefault(message, []).append(seq)
        self.owner[seq] = message

    def _swap(self, old: int, new: int) -> None:
        """``new`` is the latest version of ``old`` (a rewrite or a copy)."""
        message = self.owner[old]
        self.owner[new] = message
        seqs = self.owned[message]
        if old in seqs:
            seqs[seqs.index(old)] = new
        part = self.part_of.get(old)
        if part is not None:
            self.part_of[new] = part
            self.result_of[part] = new

    def _opaque(self, m: Message, p: Part) -> None:
        em = self.em
        em.locate(_start(p), message=m.id, part=p.id)
        if p.value is None:
            self._damaged("part", p.damage)
            return
        em.opaque(f"opencode/part/{p.type or 'unknown'}", p.value, p.size)

    def _damaged(self, kind: str, damage: Damage | None) -> None:
        d = damage or Damage("", 0)
        self.em.reason("damaged-records")
        self.em.log("opencode/bad-record", {"kind": kind, "length": d.length, "preview": d.preview})

    # -- messages ----------------------------------------------------------------------

    def _message(self, m: Message) -> None:
        em = self.em
        if m.info is None:
            em.locate(m.created, message=m.id)
            self._damaged("message", m.damage)
            for p in m.parts:
                self._opaque(m, p)
        elif m.role == "user":
            self._user(m)
        elif m.role == "assistant":
            self._assistant(m)
            done = self.plan.compactions.get(m.id)
            if done is not None:
                self._compacted(done.order, self.markers.get(done.request))
        else:
            em.locate(m.time, message=m.id)
            em.opaque("opencode/message", m.info, m.size)
            for p in m.parts:
                self._opaque(m, p)

    def _user(self, m: Message) -> None:
        em = self.em
        blocks: list[object] = []
        texts: list[str] = []
        hidden: list[Part] = []
        compaction: Part | None = None
        real = False
        for p in m.parts:
            v = p.value
            if v is None:
                hidden.append(p)
                continue
            kind = p.type
            synthetic = kind == "text" and v.get("synthetic") is True
            real = real or not synthetic
            if kind == "text" and isinstance(v.get("text"), str) and v.get("ignored") is not True:
                blocks.append(_text(str(v["text"])))
                if not synthetic:
                    texts.append(str(v["text"]))
            elif kind == "file" and (block := file_block(v)) is not None:
                blocks.append(block)
            elif kind == "compaction" and compaction is None:
                compaction = p
                blocks.append(_text(COMPACTION_PROMPT))
            elif kind == "subtask":
                blocks.append(_text(SUBTASK_PROMPT))
                hidden.append(p)
            else:
                hidden.append(p)
        if compaction is not None:
            em.locate(m.time, message=m.id, part=compaction.id)
            self.markers[m.id] = em.log(
                "compaction/start", {"record": compaction.value}, synthetic=True
            )
        prompt = real and compaction is None
        if prompt:
            em.locate(m.time, message=m.id)
            em.open_turn()
        if blocks:
            em.locate(m.time, message=m.id)
            source: JSONObject = {"kind": "user"}
            if compaction is not None:
                source = {"kind": "plugin", "plugin": PLUGIN, "compaction": True}
            elif not prompt:
                source = {"kind": "plugin", "plugin": PLUGIN, "synthetic": True}
            data: JSONObject = {"id": m.id, "role": "user", "content": blocks, "source": source}
            seq = em.emit_surface("user/message", data, "user" if prompt else "plugin")
            self._own(m.id, seq)
            if prompt:
                em.fallback(seq, texts)
        for p in hidden:
            self._opaque(m, p)

    def _assistant(self, m: Message) -> None:
        em, info = self.em, m.info or {}
        em.locate(m.time, message=m.id)
        em.ensure_turn()
        error = error_of(m)
        em.interrupted = error is not None and error.get("name") == ABORTED_ERROR
        em.turn_error = _turn_error(error) if error is not None and not em.interrupted else None
        if skipped(m):
            em.opaque("opencode/message", info, m.size)
            for p in m.parts:
                self._opaque(m, p)
            return
        source: JSONObject = {
            "kind": "model",
            "provider": nonempty(info.get("providerID")) or "unknown",
            "model": nonempty(info.get("modelID")) or "unknown",
        }
        steps = _steps(m.parts)
        legacy = None  # a message without step-finish parts keeps its usage on itself
        if not any(p.type == "step-finish" for p in m.parts):
            legacy = obj(info.get("tokens"))
        last = _last_with_content(steps)
        surfaced = 0
        for k, (start, group) in enumerate(steps):
            at = next((t for p in group if (t := _start(p)) is not None), None)
            when = m.time if at is None and k == 0 else at
            if start is not None:
                em.locate(when, message=m.id, part=start.id)
            else:
                em.locate(when, message=m.id)
            em.open_step(start.value if start is not None else None)
            content: list[object] = []
            tools: list[tuple[Part, str, str, str]] = []
            hidden: list[Part] = []
            finish: Part | None = None
            first: int | None = None
            for p in group:
                v, kind = p.value, p.type
                block = self._block(p, tools) if v is not None else None
                if block is not None:
                    content.append(block)
                    first = first if first is not None else _start(p)
                elif kind == "step-finish" and v is not None:
                    if finish is not None:
                        hidden.append(finish)
                    finish = p
                else:
                    hidden.append(p)
            if content:
                em.locate(first if first is not None else em.time, message=m.id)
                sid = m.id if surfaced == 0 else f"{m.id}#{surfaced}"
                surfaced += 1
                message: JSONObject = {
                    "id": sid,
                    "role": "assistant",
                    "content": content,
                    "source": source,
                }
                data: JSONObject = {"turn": em.turn, "step": em.step, "message": message}
                usage = obj(finish.value.get("tokens")) if finish and finish.value else None
                if usage is None and legacy is not None and k == last:
                    usage = legacy
                if usage is not None:
                    data["usage"] = usage
                self._own(m.id, em.emit_surface("assistant/message", data, "model"))
                for p, call_id, name, arguments in tools:
                    em.locate(_start(p), message=m.id, part=p.id)
                    em.tool_call(call_id, name, arguments)
                for p, call_id, _, _ in tools:
                    self._tool_result(m, p, call_id)
            for p in hidden:
                self._opaque(m, p)
            if finish is not None:
                em.locate(None, message=m.id, part=finish.id)
            else:
                em.locate(None, message=m.id)
            em.close_step(record=finish.value if finish is not None else None)

    def _block(self, p: Part, tools: list[tuple[Part, str, str, str]]) -> JSONObject | None:
        v = p.value or {}
        kind = p.type
        if kind in ("text", "reasoning") and isinstance(v.get("text"), str):
            block: JSONObject = {"type": kind, "text": v["text"]}
            if kind == "reasoning" and obj(v.get("metadata")):
                block["metadata"] = v["metadata"]
            return block
        state = obj(v.get("state"))
        call_id, name = nonempty(v.get("callID")), nonempty(v.get("tool"))
        if kind != "tool" or state is None or call_id is None or name is None:
            return None
        arguments = jsoncodec.dumps(state.get("input", {})).decode("utf-8")
        tools.append((p, call_id, name, arguments))
        return {"type": "tool-call", "id": call_id, "name": name, "arguments": arguments}

    def _tool_result(self, m: Message, p: Part, call_id: str) -> None:
        em = self.em
        state = obj((p.value or {}).get("state")) or {}
        result = _result(state)
        if result is None:  # pending or running: a call without a result (importers.md §0.4)
            em.reason("unfinished-tools")
            return
        content, is_error = result
        meta = {k: v for k, v in state.items() if k not in ("input", "output", "attachments")}
        em.locate(_end(state), message=m.id, part=p.id)
        seq = em.tool_result(call_id, p.id, content, is_error, {"state": meta})
        self._own(m.id, seq)
        self.result_of[p.id] = seq
        self.part_of[seq] = p.id
        if p.id in self.cleared:  # pruned before this result comes in store order
            self._clear(p.id, self.cleared[p.id])

    # -- reshaping: prunes, compactions, reverts ---------------------------------------

    def _prune(self, until: int | None) -> None:
        """The prunes done before a message was created (all of them at the end): a marker, then
        each cleared output's tool/result rewritten (compaction.ts ``prune``)."""
        em = self.em
        while self.prunes and (until is None or self.prunes[0][0] <= until):
            when, parts = self.prunes.popleft()
            em.locate(when, session=self.sid)
            record: JSONObject = {"compacted": when, "parts": parts}
            marker = em.log("compaction/prune", {"record": record}, synthetic=True)
            for part in parts:
                self._clear(part, marker)

    def _clear(self, part: str, marker: int) -> None:
        """The part's output is cleared for good: its current result is rewritten now, and a
        result not current now is cleared when copied back (or emitted later)."""
        self.cleared[part] = marker
        seq = self.result_of.get(part)
        if seq is not None and seq in self.em.kinds and seq not in self.blank:
            new = self.em.rewrite_result(seq, [_text(CLEARED)], marker)
            self.blank.add(new)
            self._swap(seq, new)

    def _copy(self, source: int, span: list[int] | None, markers: list[int] | None) -> int:
        """A copy of ``source`` as its latest version; a cleared output stays cleared."""
        part = self.part_of.get(source)
        content: list[object] | None = None
        if part is not None and part in self.cleared and source not in self.blank:
            content = [_text(CLEARED)]
            markers = [*(markers or []), self.cleared[part]]
        new = self.em.copy(source, span=span, markers=markers, content=content)
        if content is not None or source in self.blank:
            self.blank.add(new)
        return new

    def _compacted(self, messages: list[str], marker: int | None) -> None:
        """A completed compaction: the model's context is now the request through the summary,
        then the kept tail. Their latest events are copied, the first copy replacing the whole
        surface, so the surface is in the model's order (message-v2.ts ``filterCompacted``)."""
        sources = [s for message in messages for s in self.owned.get(message, [])]
        span = list(self.em.nodes)
        for k, source in enumerate(sources):
            markers = [marker] if k == 0 and marker is not None else None
            new = self._copy(source, span if k == 0 else None, markers)
            self._swap(source, new)

    def _reconcile(self) -> None:
        """End of the records: the surface is made the model's next context (``Plan.order``).
        A pending revert (session.revert) is why it differs, as OpenCode deletes the reverted
        messages before its next request; otherwise one of the compaction rules' rarer turns
        is. From the first position that differs, the rest is replaced by copies of each
        message's latest events, or by a placeholder when nothing follows."""
        em, session = self.em, self.native.session
        if self.plan.partial_revert:
            em.reason("partial-revert")
        markers: list[int] = []
        if self.plan.revert is not None and session.revert is not None:
            em.locate(None, session=self.sid)
            markers.append(em.log("opencode/revert", {"record": session.revert}, synthetic=True))
        elif self.markers:
            markers.append(max(self.markers.values()))
        target = [s for message in self.plan.order for s in self.owned.get(message, [])]
        nodes = list(em.nodes)
        k = 0
        while k < min(len(nodes), len(target)) and nodes[k] == target[k]:
            k += 1
        span, rest = nodes[k:], target[k:]
        if span and not rest:
            em.placeholder(span, markers, eof=True)
            return
        for j, source in enumerate(rest):
            self._copy(source, span if j == 0 and span else None, markers if j == 0 else None)


def _last_with_content(steps: list[tuple[Part | None, list[Part]]]) -> int:
    """The last step with a part that maps to content (for a whole-message usage)."""
    last = 0
    for k, (_, group) in enumerate(steps):
        if any(p.type in ("text", "reasoning", "tool") for p in group):
            last = k
    return last
