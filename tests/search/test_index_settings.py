"""The index file's SQLite and FTS5 settings (search/schema.py, semantics.md §6.3 [ours]): what a
build's speed rests on is set once, kept by a file reopened, and ``synchronous`` is relaxed only
where WAL keeps a killed writer's file consistent."""

from __future__ import annotations

import pathlib

import pytest

from dsh_query_server.search.schema import FTS_HASHSIZE, open_index


def _config(path: pathlib.Path) -> list[tuple[object, object]]:
    conn = open_index(str(path), "wal")
    try:
        rows = conn.execute("SELECT k, v FROM persisted_docs_config ORDER BY k").fetchall()
        return [(k, v) for k, v in rows if k != "version"]
    finally:
        conn.close()


def test_fts5_settings_are_set_once_and_kept(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "index.db"
    want = [("automerge", 16), ("crisismerge", 64), ("hashsize", FTS_HASHSIZE)]
    assert _config(path) == want
    assert _config(path) == want  # reopened: the same rows, none added twice


@pytest.mark.parametrize(("mode", "synchronous"), [("wal", 1), ("delete", 2), ("truncate", 2)])
def test_synchronous_is_normal_only_under_wal(
    tmp_path: pathlib.Path, mode: str, synchronous: int
) -> None:
    conn = open_index(str(tmp_path / "index.db"), mode)
    try:
        assert conn.execute("PRAGMA main.synchronous").fetchall() == [(synchronous,)]
    finally:
        conn.close()
