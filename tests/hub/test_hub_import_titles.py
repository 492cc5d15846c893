"""A hub over a foreign home lists each session's current title (``dsh-query sessions`` and
``sessions --json``): the hub remembers titles read at a revision its listing proves
(query/titlememo.py, importing/survey.py), and a title appended to a log shows in the next
command, aged past the proofs' safe age or not."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.hub.hub_wire import dsh, hub_env
from tests.persistence.importing.test_import_listing import STAMP, Clock, line

pytestmark = pytest.mark.wire


def title_line(sid: str, text: str) -> bytes:
    return line({"type": "custom-title", "customTitle": text, "sessionId": sid})


@pytest.mark.slow
def test_a_changed_title_shows_in_the_next_listing(tmp_path: Path) -> None:
    env = {**hub_env(tmp_path), "COLUMNS": "200"}
    home = tmp_path / "claude"
    clock = Clock()
    folder = home / "projects" / "-w"
    folder.mkdir(parents=True)
    for i in range(3):
        anchor = {"type": "user", "uuid": f"u{i}", "sessionId": f"t{i}", "timestamp": STAMP % i}
        anchor |= {"cwd": "/w", "message": {"role": "user", "content": f"ask {i}"}}
        path = folder / f"t{i}.jsonl"
        path.write_bytes(line(anchor) + title_line(f"t{i}", f"first title {i}"))
        clock.age(path)
    clock.age(folder, home / "projects", home)
    flags = ["--persistence", f"claude:{home}"]

    def shown() -> dict[str, str | None]:
        done = dsh(env, "sessions", "--json", *flags)
        assert done.returncode == 0, done.stderr
        return {s["header"]["id"]: s.get("title") for s in json.loads(done.stdout)}

    first = {f"t{i}": f"first title {i}" for i in range(3)}
    assert shown() == first
    assert shown() == first  # from the hub's memo: the same answer
    with open(folder / "t1.jsonl", "ab") as f:  # a new title, its times left as they are
        f.write(title_line("t1", "renamed now"))
    assert shown() == {**first, "t1": "renamed now"}
    with open(folder / "t2.jsonl", "ab") as f:  # and one aged past the safe age
        f.write(title_line("t2", "renamed aged"))
    clock.age(folder / "t2.jsonl")
    expected = {**first, "t1": "renamed now", "t2": "renamed aged"}
    assert shown() == expected
    table = dsh(env, "sessions", *flags)
    assert table.returncode == 0, table.stderr
    assert "renamed aged" in table.stdout and "renamed now" in table.stdout
    assert shown() == expected
    os.remove(folder / "t0.jsonl")
    del expected["t0"]
    assert shown() == expected
    dsh(env, "hub", "stop", *flags)
