"""Where OpenCode keeps its sessions (importers.md §8.1), after sst/opencode's writers:
``Global.Path.data`` is ``$XDG_DATA_HOME/opencode`` (else ``~/.local/share/opencode``), the store
is ``opencode.db`` there (packages/opencode/src/storage/db.ts) and the pre-SQLite JSON files are
``storage/session/<project>/<id>.json``, ``storage/message/<session>/<id>.json`` and
``storage/part/<message>/<id>.json`` (packages/opencode/src/storage/json-migration.ts)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

DB_NAME = "opencode.db"
STORAGE = "storage"

# Session titles OpenCode gives before it has one (Session.createDefaultTitle): no native title.
_DEFAULT_TITLE = re.compile(
    r"(New session - |Child session - )\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z"
)


def default_home(env: Mapping[str, str]) -> str:
    """OpenCode's data directory: ``$XDG_DATA_HOME/opencode``, else ``~/.local/share/opencode``
    (xdg-basedir, which OpenCode uses on every platform)."""
    data = env.get("XDG_DATA_HOME", "")
    if not data:
        data = os.path.join(env.get("HOME", ""), ".local", "share")
    return os.path.join(data, "opencode")


def db_path(home: str) -> str:
    return os.path.join(home, DB_NAME)


def storage_dir(home: str, *parts: str) -> str:
    return os.path.join(home, STORAGE, *parts)


def is_default_title(title: str) -> bool:
    return _DEFAULT_TITLE.fullmatch(title) is not None
