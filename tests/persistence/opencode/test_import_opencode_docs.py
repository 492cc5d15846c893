"""opencode: the worked examples of importers.md §8.8 are what the importer gives for their
fixtures, event by event."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from dsh_query_server.session.fold import fold_surface
from tests.import_helpers import DOCS
from tests.persistence.opencode.opencode_helpers import backend_for, load

DOC = DOCS / "importers.md"


def doc_tables() -> dict[str, list[tuple[str, ...]]]:
    text = DOC.read_text(encoding="utf-8")
    out = {}
    for name, block in re.findall(r"<!-- table: (\S+) -->\n```\n(.*?)```", text, re.S):
        rows = []
        for line in block.strip().splitlines()[1:]:
            tokens = line.split()
            detail = " ".join(tokens[2:-4])
            rows.append((tokens[0], tokens[1], detail, *tokens[-4:]))
        out[name] = rows
    return out


def _detail(etype: str, d: dict[str, Any]) -> str:
    if etype == "user/message":
        return d["id"].removeprefix("msg_")
    if etype == "assistant/message":
        return d["message"]["id"].removeprefix("msg_")
    if etype == "tool/result":
        return d["message"]["id"].removeprefix("prt_")
    if etype == "turn/start":
        return f"{{turn:{d['turn']}}}"
    if etype == "turn/end":
        return f"{{{d['turn']},{d['reason']['kind']}}}"
    if etype in ("step/start", "step/end"):
        return f"{{{d['turn']},{d['step']}}}"
    if etype == "tool/call":
        return d["callId"]
    if etype == "session/title":
        return f"({d['source']['kind']})"
    return ""


def actual(ins: Any) -> list[tuple[str, ...]]:
    created = ins.meta.to_value()["createdAt"]
    classes = fold_surface(ins.events).classes()
    rows = []
    for e in ins.events:
        v = e.to_value()
        op = v.get("surfaceOp", "-")
        if isinstance(op, dict):
            op = f"R({op['start']}..{op['end']})"
        src = v.get("sourceEventSeqs")
        src = "-" if src is None else json.dumps(src, separators=(",", ":"))
        detail = _detail(e.type, v["data"])
        rows.append((str(e.seq), e.type, detail, str(e.time - created), op, src, classes[e.seq]))
    return rows


TABLES = doc_tables()


def test_the_doc_has_its_tables():
    assert set(TABLES) == {"compaction", "prune", "revert"}


@pytest.mark.parametrize("name", sorted(TABLES))
def test_worked_example_tables_match_the_importer(tmp_path, name):
    backend = backend_for(tmp_path, load(name)["sessions"], "db")
    (header,) = backend.list()
    assert actual(backend.inspect(header.to_value()["id"])) == TABLES[name]
