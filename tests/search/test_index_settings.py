"""The index file's SQLite and FTS5 settings (search/schema.py, semantics.md §6.3 [ours]): what a
build's speed rests on is set once, kept by a file reopened, and ``synchronous`` is relaxed only
where WAL keeps a killed writer's file consistent."""

from __future__ import annotations

import pathlib

import apsw
import pytest

from dsh_query_server.search.schema import FTS_HASHSIZE, PAGE_SIZE, open_index


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


def test_a_new_index_has_16k_pages_and_an_old_one_keeps_its_own(tmp_path: pathlib.Path) -> None:
    def page_size(path: pathlib.Path) -> object:
        conn = open_index(str(path), "wal")
        try:
            return conn.execute("PRAGMA main.page_size").fetchall()[0][0]
        finally:
            conn.close()

    assert page_size(tmp_path / "new.db") == PAGE_SIZE
    old = tmp_path / "old.db"
    made = apsw.Connection(str(old))  # a file an earlier version made, with 4 KiB pages
    made.execute("PRAGMA page_size = 4096")
    made.execute("PRAGMA journal_mode = wal").fetchall()
    made.close()
    assert page_size(old) == 4096
