"""The image attachments an export carries (tools.md §2.3): the references in a session's
lines and the verified bytes from the attachment store."""

from __future__ import annotations

import hashlib
import os
import re
from typing import Any

from .. import errors, jsoncodec
from ..errors import QueryError

EXPORT_FAILED = errors.EXPORT_FAILED
MEDIA_TYPES = {"image/png": "png", "image/jpeg": "jpg", "image/webp": "webp", "image/gif": "gif"}
_ATTACHMENT_ID = re.compile(r"sha256:([0-9a-f]{64})")


def media_refs(content: bytes, found: dict[str, dict[str, Any]]) -> None:
    """Image attachment references of §2.3 in each line that parses as JSON (last one wins)."""
    for line in content.split(b"\n"):
        if b'"image"' not in line:
            continue
        try:
            value = jsoncodec.loads(line)
        except ValueError:
            continue
        if not isinstance(value, dict):
            continue
        data = value.get("data")
        if not isinstance(data, dict):
            continue
        roots: list[Any] = [data.get("content")]
        message = data.get("message")
        if isinstance(message, dict):
            roots.append(message.get("content"))
        inserted = data.get("inserted")
        if isinstance(inserted, list):
            roots += [i.get("content") for i in inserted if isinstance(i, dict)]
        chunk = data.get("chunk")
        if isinstance(chunk, dict) and chunk.get("type") == "block-end":
            roots.append([chunk.get("block")])
        stack = [r for r in roots if isinstance(r, list)]
        while stack:
            for block in stack.pop():
                if not isinstance(block, dict):
                    continue
                attachment = block.get("attachment")
                if block.get("type") == "image" and isinstance(attachment, dict):
                    aid, media = attachment.get("id"), attachment.get("mediaType")
                    if (
                        isinstance(aid, str)
                        and _ATTACHMENT_ID.fullmatch(aid)
                        and media in MEDIA_TYPES
                    ):
                        found[aid] = attachment
                nested = block.get("content")
                if isinstance(nested, list):
                    stack.append(nested)


_MAGIC = {"png": (b"\x89PNG\r\n\x1a\n",), "jpg": (b"\xff\xd8\xff",), "gif": (b"GIF87a", b"GIF89a")}


def media_bytes(store: str | None, attachment: dict[str, Any]) -> bytes:
    aid = attachment["id"]

    def fail(reason: str) -> QueryError:
        return QueryError(EXPORT_FAILED, f'media "{aid}" could not be read: {reason}')

    if store is None:
        raise fail("no attachment store is configured")
    digest = aid.split(":", 1)[1]
    try:
        with open(os.path.join(store, "objects", digest[:2], digest), "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise fail("Attachment object is missing.") from None
    except OSError:
        raise fail("Unable to read image attachment.") from None
    if hashlib.sha256(data).hexdigest() != digest:
        raise fail("Stored attachment failed integrity verification.")
    ext = MEDIA_TYPES[attachment["mediaType"]]
    magic_ok = (
        (data[:4] == b"RIFF" and data[8:12] == b"WEBP")
        if ext == "webp"
        else any(data.startswith(m) for m in _MAGIC[ext])
    )
    if attachment.get("bytes") != len(data) or not magic_ok:
        raise fail("Stored attachment metadata does not match its reference.")
    return data
