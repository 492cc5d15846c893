"""OpenCode homes for the tests, built the way OpenCode writes them: ``opencode.db`` with the
session, message and part tables of sst/opencode packages/opencode/src/session/session.sql.ts
(one row per record, the record's JSON minus its ids in ``data``), or the legacy
``storage/{session,message,part}/`` files of packages/opencode/src/storage/storage.ts.

A fixture is ``{"rule": ..., "sessions": [{"session": Session.Info, "messages": [{"info":
MessageV2.Info, "parts": [Part, ...]}]}]}``; a message or part given as ``{"id": ..., "raw":
text}`` is stored as that text (a damaged record)."""

from __future__ import annotations

import json
import pathlib
import sqlite3
from typing import Any

from tests import import_helpers

FIXTURES = import_helpers.FIXTURES / "opencode"

SCHEMA = """
CREATE TABLE project (
  id text PRIMARY KEY NOT NULL, worktree text NOT NULL, vcs text, name text,
  time_created integer NOT NULL, time_updated integer NOT NULL
);
CREATE TABLE session (
  id text PRIMARY KEY NOT NULL,
  project_id text NOT NULL REFERENCES project(id) ON DELETE cascade,
  parent_id text, slug text NOT NULL, directory text NOT NULL, title text NOT NULL,
  version text NOT NULL, share_url text, summary_additions integer, summary_deletions integer,
  summary_files integer, summary_diffs text, revert text, permission text,
  time_created integer NOT NULL, time_updated integer NOT NULL,
  time_compacting integer, time_archived integer
);
CREATE INDEX session_project_idx ON session (project_id);
CREATE INDEX session_parent_idx ON session (parent_id);
CREATE TABLE message (
  id text PRIMARY KEY NOT NULL,
  session_id text NOT NULL REFERENCES session(id) ON DELETE cascade,
  time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL
);
CREATE INDEX message_session_time_created_id_idx ON message (session_id, time_created, id);
CREATE TABLE part (
  id text PRIMARY KEY NOT NULL,
  message_id text NOT NULL REFERENCES message(id) ON DELETE cascade,
  session_id text NOT NULL,
  time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL
);
CREATE INDEX part_message_id_id_idx ON part (message_id, id);
CREATE INDEX part_session_idx ON part (session_id);
"""


def load(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


def _data(record: dict[str, Any], *ids: str) -> str:
    if "raw" in record:
        return str(record["raw"])
    return json.dumps({k: v for k, v in record.items() if k not in ids}, ensure_ascii=False)


def _time(record: dict[str, Any], default: int) -> int:
    t = record.get("time") if isinstance(record.get("time"), dict) else {}
    value = t.get("created", default) if isinstance(t, dict) else default
    return value if isinstance(value, int) else default


def connect(path: pathlib.Path) -> sqlite3.Connection:
    """A writer as OpenCode opens its store (db.ts: WAL, NORMAL sync, a busy timeout)."""
    conn = sqlite3.connect(path, isolation_level=None, timeout=5)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    return conn


def write_db(home: pathlib.Path, sessions: list[dict[str, Any]]) -> pathlib.Path:
    home.mkdir(parents=True, exist_ok=True)
    path = home / "opencode.db"
    conn = connect(path)
    try:
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'session'").fetchone():
            conn.executescript(SCHEMA)
        conn.execute("BEGIN")
        for s in sessions:
            insert(conn, s)
        conn.execute("COMMIT")
    finally:
        conn.close()
    return path


def insert(conn: sqlite3.Connection, s: dict[str, Any]) -> None:
    info = s["session"]
    project = info.get("projectID", "global")
    created = info["time"]["created"]
    updated = info["time"].get("updated", created)
    conn.execute(
        "INSERT OR IGNORE INTO project VALUES (?, '/', NULL, NULL, ?, ?)",
        (project, created, created),
    )
    revert = info.get("revert")
    conn.execute(
        "INSERT INTO session (id, project_id, parent_id, slug, directory, title, version,"
        " revert, time_created, time_updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            info["id"],
            project,
            info.get("parentID"),
            info.get("slug", ""),
            info.get("directory", ""),
            info.get("title", ""),
            info.get("version", ""),
            json.dumps(revert) if revert is not None else None,
            created,
            updated,
        ),
    )
    for m in s.get("messages", []):
        minfo = m["info"]
        mcreated = _time(minfo, created)
        conn.execute(
            "INSERT INTO message VALUES (?, ?, ?, ?, ?)",
            (minfo["id"], info["id"], mcreated, mcreated, _data(minfo, "id", "sessionID")),
        )
        for p in m.get("parts", []):
            conn.execute(
                "INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
                (
                    p["id"],
                    minfo["id"],
                    info["id"],
                    mcreated,
                    mcreated,
                    _data(p, "id", "messageID", "sessionID"),
                ),
            )


def write_legacy(home: pathlib.Path, sessions: list[dict[str, Any]]) -> pathlib.Path:
    storage = home / "storage"
    for s in sessions:
        info = s["session"]
        project = info.get("projectID", "global")
        _put(storage / "session" / project / f"{info['id']}.json", info)
        for m in s.get("messages", []):
            minfo = m["info"]
            _put(storage / "message" / info["id"] / f"{minfo['id']}.json", minfo)
            for p in m.get("parts", []):
                _put(storage / "part" / minfo["id"] / f"{p['id']}.json", p)
    return storage


def _put(path: pathlib.Path, record: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if "raw" in record:
        path.write_text(str(record["raw"]), encoding="utf-8")
    else:
        path.write_text(json.dumps(record, ensure_ascii=False, indent=2), encoding="utf-8")


def snapshot_files(home: pathlib.Path) -> dict[str, tuple[bytes, int]]:
    """Bytes and mtime of every file of the home except SQLite's own ``-shm``/``-wal``
    coordination files (a reader of a WAL database shares them; importers.md §8.6)."""
    out: dict[str, tuple[bytes, int]] = {}
    for path in sorted(home.rglob("*")):
        if path.is_file() and not path.name.endswith(("-shm", "-wal")):
            out[str(path.relative_to(home))] = (path.read_bytes(), path.stat().st_mtime_ns)
    return out


def backend_for(tmp: pathlib.Path, sessions: list[dict[str, Any]], layout: str = "db") -> Any:
    """A backend over a fresh home holding ``sessions`` in the given layout."""
    from dsh_query_server.persistence.opencode.backend import OpenCodeBackend

    home = tmp / f"opencode-{layout}"
    (write_db if layout == "db" else write_legacy)(home, sessions)
    return OpenCodeBackend(str(home), f"opencode:{home}")


def rows(ins: Any) -> list[tuple[Any, ...]]:
    """(seq, type, surfaceOp, sourceEventSeqs, class) per event."""
    classes = import_helpers.checked(ins, ins.meta.to_value()["id"])
    out = []
    for e in ins.events:
        v = e.to_value()
        op = v.get("surfaceOp")
        if isinstance(op, dict):
            op = f"R({op['start']}..{op['end']})"
        out.append((e.seq, e.type, op, v.get("sourceEventSeqs"), classes[e.seq]))
    return out


def surface_ids(ins: Any) -> list[str]:
    from dsh_query_server.session.fold import fold_surface

    out = []
    for seq in fold_surface(ins.events).nodes:
        d = ins.events[seq].data()
        out.append((d if ins.events[seq].type == "user/message" else d["message"])["id"])
    return out
