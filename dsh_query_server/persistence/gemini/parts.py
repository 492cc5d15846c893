"""Gemini API parts -> dsh content blocks (importers.md §7.3's block table).

Gemini CLI stores ``@google/genai`` ``PartListUnion`` values: a string, one ``Part`` object or a
list of strings and parts. A part has no ``type``: its kind is the key it carries (``text``,
``functionCall``, ``functionResponse``, ``inlineData``, ...).
"""

from __future__ import annotations

from ... import jsoncodec
from ..importing.emitter import JSONObject
from ..importing.values import arr, nonempty, obj

PLUGIN = "gemini-cli"
PROVIDER = "google"


def part_list(content: object) -> list[object]:
    """A ``PartListUnion`` as a list of parts (a string is one text part; null is none)."""
    if isinstance(content, str):
        return [{"text": content}]
    items = arr(content)
    if items is not None:
        return [{"text": p} if isinstance(p, str) else p for p in items]
    return [content] if obj(content) is not None else []


def text_block(text: str) -> JSONObject:
    return {"type": "text", "text": text}


def block_of(part: object) -> JSONObject | None:
    """One part as a dsh block; None for an empty text (Gemini sends nothing for it). Function
    calls and responses are taken apart by the callers before this is asked."""
    p = obj(part)
    if p is None:
        return {"type": "gemini-part", "part": part}
    text = p.get("text")
    if isinstance(text, str):
        if not text:
            return None
        if p.get("thought") is True:
            out: JSONObject = {"type": "reasoning", "text": text}
            signature = p.get("thoughtSignature")
            if isinstance(signature, str):
                out["signature"] = signature
            return out
        return text_block(text)
    inline = obj(p.get("inlineData"))
    mime = inline.get("mimeType") if inline is not None else None
    if inline is not None and isinstance(mime, str) and mime.startswith("image/"):
        return {"type": "image", "attachment": {"inlineData": inline}}
    return {"type": "gemini-part", "part": p}


def blocks_of(parts: list[object]) -> list[object]:
    return [b for b in map(block_of, parts) if b is not None]


def arguments_of(args: object) -> str:
    """A call's ``args`` as JSON text in key order (``{}`` when absent)."""
    return jsoncodec.dumps({} if args is None else args).decode("utf-8")


def call_block(call: object) -> JSONObject | None:
    """A ``functionCall`` or a ``toolCalls`` entry as a tool-call block; None without a
    non-empty string id and a string name."""
    c = obj(call)
    if c is None:
        return None
    call_id, name = nonempty(c.get("id")), c.get("name")
    if call_id is None or not isinstance(name, str):
        return None
    return {
        "type": "tool-call",
        "id": call_id,
        "name": name,
        "arguments": arguments_of(c.get("args")),
    }


def function_call(part: object) -> JSONObject | None:
    p = obj(part)
    return obj(p.get("functionCall")) if p is not None else None


def function_response(part: object) -> JSONObject | None:
    p = obj(part)
    return obj(p.get("functionResponse")) if p is not None else None


def _response_blocks(response: JSONObject, out: list[object]) -> bool:
    """The blocks of one ``functionResponse``; True when it reports an error."""
    error = False
    if "response" in response:
        value = response["response"]
        r = obj(value)
        if r is not None and r and all(k in ("output", "error") for k in r):
            if all(isinstance(v, str) for v in r.values()):
                for key in ("output", "error"):
                    if key in r:
                        out.append(text_block(str(r[key])))
                return "error" in r
        out.append(text_block(jsoncodec.dumps(value).decode("utf-8")))
        error = r is not None and "error" in r
    out.extend(blocks_of(arr(response.get("parts")) or []))
    return error


def result_blocks(parts: list[object]) -> tuple[list[object], bool]:
    """A tool's result parts as the content of one tool-result block, and whether a
    ``functionResponse`` among them reports an error (``response.error``)."""
    out: list[object] = []
    error = False
    for part in parts:
        response = function_response(part)
        if response is None:
            block = block_of(part)
            if block is not None:
                out.append(block)
        elif _response_blocks(response, out):
            error = True
    return out, error
