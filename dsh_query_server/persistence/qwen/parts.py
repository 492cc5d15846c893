"""Qwen Code message parts (``@google/genai`` ``Part`` objects) as dsh content blocks
(importers.md §10.3's part table). Pure functions: no emitter, no state."""

from __future__ import annotations

from dataclasses import dataclass

from ... import jsoncodec
from ..importing.emitter import JSONObject
from ..importing.values import nonempty, obj


def _json_text(value: object) -> str:
    return jsoncodec.dumps(value).decode("utf-8")


def _signed(block: JSONObject, part: JSONObject) -> JSONObject:
    """Gemini's ``thoughtSignature`` rides along on the block it was sent with."""
    if "thoughtSignature" in part:
        block["signature"] = part["thoughtSignature"]
    return block


def map_part(part: object) -> object:
    """One part of a model or user message (a ``functionResponse`` is mapped by ``Results``)."""
    p = obj(part)
    if p is None:
        return part
    text = p.get("text")
    if isinstance(text, str):
        kind = "reasoning" if p.get("thought") is True else "text"
        return _signed({"type": kind, "text": text}, p)
    call = obj(p.get("functionCall"))
    if call is not None:
        call_id, name = nonempty(call.get("id")), call.get("name")
        if call_id is not None and isinstance(name, str):
            args = call.get("args")
            arguments = _json_text(args if args is not None else {})
            return _signed(
                {"type": "tool-call", "id": call_id, "name": name, "arguments": arguments}, p
            )
    inline = obj(p.get("inlineData"))
    if inline is not None and str(inline.get("mimeType", "")).startswith("image/"):
        return {"type": "image", "attachment": inline}
    return p


def map_parts(parts: list[object]) -> list[object]:
    return [map_part(p) for p in parts]


def response_id(part: object) -> str | None:
    """The call id of a ``functionResponse`` part, or None for any other part."""
    p = obj(part)
    fr = obj(p.get("functionResponse")) if p is not None else None
    return nonempty(fr.get("id")) if fr is not None else None


def result_content(part: JSONObject) -> tuple[list[object], bool]:
    """A ``functionResponse`` part's content and whether it is an error. Qwen Code sends tool
    output as ``response.output`` and failures as ``response.error``; any other response is kept
    as its compact JSON text. Multimodal ``parts`` of the response follow, mapped."""
    fr = obj(part.get("functionResponse")) or {}
    response = fr.get("response")
    body = obj(response)
    content: list[object] = []
    is_error = False
    if body is not None and isinstance(body.get("output"), str) and len(body) == 1:
        content.append({"type": "text", "text": body["output"]})
    elif body is not None and isinstance(body.get("error"), str) and len(body) == 1:
        content.append({"type": "text", "text": body["error"]})
        is_error = True
    elif response is not None:
        content.append({"type": "text", "text": _json_text(response)})
    extra = fr.get("parts")
    if isinstance(extra, list):
        content.extend(map_parts(list(extra)))  # pyright: ignore[reportUnknownArgumentType]
    return content, is_error


@dataclass(frozen=True, slots=True)
class Piece:
    """A run of a user-role message: one tool result (``call_id`` set) or plain blocks."""

    call_id: str | None
    blocks: list[object]
    is_error: bool = False


def split_user(parts: list[object]) -> list[Piece]:
    """In part order, one piece per ``functionResponse`` with a call id and one per run of other
    parts (importers.md §0.4: a result without a call id stays a plain block)."""
    out: list[Piece] = []
    run: list[object] = []
    for part in parts:
        call_id = response_id(part)
        if call_id is None:
            run.append(map_part(part))
            continue
        if run:
            out.append(Piece(None, run))
            run = []
        content, is_error = result_content(obj(part) or {})
        out.append(Piece(call_id, content, is_error))
    if run or not out:
        out.append(Piece(None, run))
    return out


def texts_of(parts: list[object]) -> list[str]:
    """The non-thought text parts, in order (the fallback title's source)."""
    out: list[str] = []
    for part in parts:
        p = obj(part)
        if p is not None and isinstance(p.get("text"), str) and p.get("thought") is not True:
            out.append(str(p["text"]))
    return out
