"""A real-sized dsh home with damage (issue 25): the real Claude Code transcripts of
tests/fixtures/real replicated to 156 sessions, imported into a ``jsonl:`` root as dsh logs, plus
one garbled copy (one damaged line in the middle of its log: unreadable) and one copy whose
header line is damaged (the listing skips it)."""

from __future__ import annotations

import pathlib
from dataclasses import dataclass

from dsh_query_server.model.event import Header
from dsh_query_server.persistence.mount.uri import open_backend
from tests.import_helpers import REAL

# The sessionId inside each real transcript, replaced by a fresh id in every copy.
ORIGINAL_IDS = {
    "marot-spotter-short": "55604662-cf2a-4331-851a-ec234028f8ca",
    "marot-spotter-subagent": "491e126e-1e71-469c-ade2-fcc8af567c74",
    "marot-spotter-tool_heavy": "d6e0bada-1959-4eec-a9d2-0bfade768d8f",
    "simonw-sample_session": "test-session-id",
}
COPIES = 39  # 4 transcripts x 39 = 156 sessions, the size of the home in the issue
GARBLED = "dsh-garbled-copy"
HEADLESS = "dsh-headless-copy"


@dataclass(frozen=True)
class RealHome:
    uri: str
    sessions: int  # the healthy ones a listing gives
    garbled: pathlib.Path  # its log, damaged in the middle
    garbled_cwd: str
    headless: pathlib.Path  # its header line damaged


def claude_copies(home: pathlib.Path) -> pathlib.Path:
    """A Claude Code home with COPIES copies of each real transcript, each with its own id."""
    project = home / "projects" / "-home-marco-projects-spotter"
    project.mkdir(parents=True)
    for n in range(COPIES):
        for i, (name, original) in enumerate(ORIGINAL_IDS.items()):
            sid = f"{n:08x}-0000-4000-8000-{i:012x}"
            text = (REAL / "claude-code" / f"{name}.jsonl").read_text()
            (project / f"{sid}.jsonl").write_text(text.replace(original, sid))
    return home


def real_dsh_home(base: pathlib.Path) -> RealHome:
    claude = open_backend(f"claude:{claude_copies(base / 'claude')}")
    root = base / "dsh"
    store = open_backend(f"jsonl:{root}?compression=none")
    try:
        snapshots = sorted(claude.list_snapshots(), key=lambda s: s.header.id)
        first = None
        for snapshot in snapshots:
            inspection = claude.inspect(snapshot.header.id)
            value = inspection.meta.to_value()
            value["id"] = f"dsh-{value['id']}"
            value.pop("parentSession", None)  # each copy stands alone in the dsh root
            value.pop("source", None)
            store.create(Header.from_value(value))
            store.append(value["id"], inspection.events)
            first = first or (value, inspection.events)
        assert first is not None
        for sid in (GARBLED, HEADLESS):
            store.create(Header.from_value({**first[0], "id": sid}))
            store.append(sid, first[1])
    finally:
        store.close()
    cwd = str(first[0]["cwd"])
    garbled = next(root.glob(f"*/{GARBLED}/session.jsonl"))
    lines = garbled.read_text().splitlines(keepends=True)
    middle = len(lines) // 2
    lines[middle] = '{"type": "assistant/message", "seq": ' + "\x00garbled\n"
    garbled.write_text("".join(lines))
    headless = next(root.glob(f"*/{HEADLESS}/session.jsonl"))
    rest = headless.read_text().split("\n", 1)[1]
    headless.write_text('{"type": "session", "version": 0, "id": \n' + rest)
    return RealHome(f"jsonl:{root}", len(snapshots), garbled, cwd, headless)
