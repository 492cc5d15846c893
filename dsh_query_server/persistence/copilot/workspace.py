"""A session's ``workspace.yaml`` (importers.md §9.6): the top-level scalars the titles come from.

Copilot CLI writes a flat YAML mapping (``id``, ``cwd``, ``summary``, ``created_at``, ...). No YAML
library is a dependency, so this reads only what such a file holds: top-level ``key: value``
lines whose value is a plain scalar (continued on more-indented lines), a single- or
double-quoted scalar, or a literal/folded block scalar. Anything else leaves that key out; a
key is never guessed.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

LIMIT = 65_536  # a workspace.yaml is a few hundred bytes; a larger one is read up to this
_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*):(?:[ \t]+(.*))?\Z")
_BLOCK = re.compile(r"([|>])([+-]?)[ \t]*(?:#.*)?\Z")
_ESCAPES = {
    **{"0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n", "v": "\v"},
    **{"f": "\f", "r": "\r", "e": "\x1b", " ": " ", '"': '"', "/": "/", "\\": "\\"},
    **{"N": "\x85", "_": "\xa0", "L": "\u2028", "P": "\u2029"},
}


@dataclass(frozen=True, slots=True)
class Scalar:
    """One top-level string value and the line its key is on (from 1)."""

    line: int
    value: str


def _indented(line: str) -> bool:
    return line[:1] in (" ", "\t")


_COMMENT = re.compile(r"(?:\A|[ \t]+)#.*\Z")


def _plain(first: str, more: list[str]) -> str | None:
    """A plain scalar: its lines fold to one space each (a blank line is a newline); a comment
    ends it."""
    parts: list[str] = []
    for raw in [first, *more]:
        text, ended = _COMMENT.sub("", raw).strip(), _COMMENT.search(raw) is not None
        parts.append(text)
        if ended:
            break
    if not parts[0] or parts[0][0] in "[{&*!|>%@`#":
        return None
    out = ""
    for p in parts:
        out += "\n" if not p else (" " if out and not out.endswith("\n") else "") + p
    return out.rstrip("\n")


def _quoted(first: str, more: list[str]) -> str | None:
    quote = first[0]
    text = first + "".join("\n" + m for m in more)
    end = _closing(text, quote)
    if end < 0 or not re.fullmatch(r"[ \t]*(#.*)?", text[end + 1 :]):
        return None
    body = _fold(text[1:end])
    return body.replace("''", "'") if quote == "'" else _unescape(body)


def _closing(text: str, quote: str) -> int:
    i = 1
    while i < len(text):
        c = text[i]
        if quote == "'" and c == "'":
            if text[i + 1 : i + 2] == "'":
                i += 2
                continue
            return i
        if quote == '"' and c == "\\":
            i += 2
            continue
        if quote == '"' and c == '"':
            return i
        i += 1
    return -1


def _fold(body: str) -> str:
    """Line folding inside a flow scalar: a line break becomes a space, an empty line a newline."""
    lines = body.split("\n")
    if len(lines) == 1:
        return body
    out = lines[0].rstrip(" \t")
    for ln in lines[1:]:
        ln = ln.strip(" \t")
        out += "\n" if not ln else (ln if out.endswith("\n") else " " + ln)
    return out


def _unescape(body: str) -> str | None:
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        nxt = body[i + 1 : i + 2]
        if nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
        elif nxt in ("x", "u", "U"):
            width = {"x": 2, "u": 4, "U": 8}[nxt]
            digits = body[i + 2 : i + 2 + width]
            if len(digits) != width or not all(d in "0123456789abcdefABCDEF" for d in digits):
                return None
            out.append(chr(int(digits, 16)) if int(digits, 16) < 0x110000 else "\ufffd")
            i += 2 + width
        else:
            return None
    return "".join(out)


def _block(style: str, chomp: str, more: list[str]) -> str | None:
    lines = list(more)
    content = [ln for ln in lines if ln.strip()]
    if not content:
        return ""
    indent = min(len(ln) - len(ln.lstrip(" ")) for ln in content)
    if indent == 0:
        return None
    body = [ln[indent:] if ln.strip() else "" for ln in lines]
    while body and body[-1] == "" and chomp != "+":
        body.pop()
    if style == "|":
        text = "\n".join(body)
    else:  # folded: a break between two plain lines is a space, an empty line a newline
        text = body[0]
        for prev, ln in zip(body, body[1:], strict=False):
            if not ln:
                text += "\n"
            elif not prev:
                text += ln
            elif ln.startswith((" ", "\t")) or prev.startswith((" ", "\t")):
                text += "\n" + ln
            else:
                text += " " + ln
    return text if chomp == "-" else text + "\n"


def parse(text: str) -> dict[str, Scalar]:
    """The top-level string scalars of a flat mapping; a later repeat of a key wins."""
    lines = text.replace("\r\n", "\n").split("\n")
    out: dict[str, Scalar] = {}
    i = 0
    while i < len(lines):
        m = _KEY.match(lines[i])
        start = i
        i += 1
        more: list[str] = []
        while i < len(lines) and (_indented(lines[i]) or not lines[i].strip()):
            more.append(lines[i])
            i += 1
        if m is None:
            continue
        while more and not more[-1].strip():
            more.pop()
        raw = (m.group(2) or "").rstrip()
        block = _BLOCK.fullmatch(raw)
        if block is not None:
            value = _block(block.group(1), block.group(2), more)
        elif raw[:1] in ("'", '"'):
            value = _quoted(raw, more)
        elif raw:
            value = _plain(raw, more)
        else:
            value = None
        if value is not None:
            out[m.group(1)] = Scalar(start + 1, value)
        else:
            out.pop(m.group(1), None)
    return out


def read(path: str) -> tuple[os.stat_result | None, dict[str, Scalar]]:
    """The file's stat and scalars; no stat when it vanished, no scalars when unreadable."""
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            data = f.read(LIMIT)
    except FileNotFoundError:
        return None, {}
    except OSError:
        try:
            return os.stat(path), {}
        except OSError:
            return None, {}
    return st, parse(data.decode("utf-8", "replace"))
