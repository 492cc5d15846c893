"""A transcript's identity (persistence.md §4.8 step 4.6): the path its header's id and cwd name
must be the path it was read from (or the same file)."""

from __future__ import annotations

import os

from msgspec import UNSET

from ...model.event import Header
from .errors import corrupt
from .paths import transcript_path
from .window import Located


def _same_existing_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def expected_transcript(root: str, header: Header, path: str, encoding: str) -> str:
    cwd = None if header.cwd is UNSET else header.cwd
    if header.id == "" or cwd == "":
        raise corrupt(f'corrupt session log "{path}": header id cannot name a storage path')
    return transcript_path(root, cwd, header.id, encoding)


def check_path_identity(root: str, header: Header, path: str, encoding: str) -> bool:
    """Raises when the header does not name this path; True when it names it exactly."""
    expected = expected_transcript(root, header, path, encoding)
    if expected == path:
        return True
    if not _same_existing_file(expected, path):
        raise corrupt(
            f'corrupt session log "{path}": header id "{header.id}" and cwd identify "{expected}"'
        )
    return False


def check_identity(root: str, session_id: str, header: Header, located: Located) -> None:
    if header.id != session_id:
        raise corrupt(
            f'corrupt session log "{located.path}": requested id "{session_id}" '
            f'does not match header id "{header.id}"'
        )
    check_path_identity(root, header, located.path, located.encoding)
