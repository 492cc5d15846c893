"""The gemini: importer rule by rule (importers.md §7.3–§7.5): one hand-written session per rule
(tests/fixtures/gemini/rules, README there), each put in a home as Gemini CLI names it, plus a
generated 20,000-event session."""

from __future__ import annotations

import json
import pathlib
import shutil
from typing import Any

import pytest

from dsh_query_server.persistence.gemini.backend import GeminiBackend
from dsh_query_server.session.fold import fold_surface
from tests.import_helpers import DOCS, FIXTURES, checked, data

RULES = FIXTURES / "gemini" / "rules"


def mount(tmp_path: pathlib.Path, name: str) -> tuple[GeminiBackend, str, pathlib.Path]:
    """The fixture as the only session of a home; its id and path."""
    home = tmp_path / ".gemini"
    chats = home / "tmp" / "w" / "chats"
    chats.mkdir(parents=True)
    (home / "tmp/w/.project_root").write_text("/w")
    ext = ".json" if name.endswith(".json") else ".jsonl"
    path = chats / f"session-2026-01-02T00-00-{name[:8]}{ext}"
    shutil.copy(RULES / name, path)
    backend = GeminiBackend(str(home), "gemini:test")
    [header] = backend.list()
    return backend, str(header.id), path


def rows(backend: GeminiBackend, sid: str) -> list[tuple[int, str, Any, Any, str]]:
    """(seq, type, surfaceOp, sourceEventSeqs, class) of the whole log, checked first."""
    ins = backend.inspect(sid)
    classes = checked(ins, sid)
    out = []
    for e in ins.events:
        v = e.to_value()
        out.append((e.seq, e.type, v.get("surfaceOp"), v.get("sourceEventSeqs"), classes[e.seq]))
    return out


def ids(backend: GeminiBackend, sid: str) -> list[str]:
    """The message ids on the final surface."""
    ins = backend.inspect(sid)
    out = []
    for seq in fold_surface(ins.events).nodes:
        d = ins.events[seq].data()
        out.append(d["id"] if ins.events[seq].type == "user/message" else d["message"]["id"])
    return out


def R(start: int, end: int) -> dict[str, Any]:
    return {"op": "replace", "start": start, "end": end}


def reasons(backend: GeminiBackend, sid: str) -> list[str]:
    return backend.inspect(sid).meta.to_value()["source"].get("approximate", [])


def test_rollback_leaves_a_pending_tail_an_aborted_turn_and_a_placeholder(tmp_path):
    backend, sid, _ = mount(tmp_path, "rollback.jsonl")
    got = rows(backend, sid)
    assert got[9:] == [
        (9, "user/message", "append", None, "shadowed"),
        (10, "gemini/set", None, None, "log-only"),
        (11, "turn/end", None, None, "log-only"),
        (12, "user/message", R(9, 9), [9, 10], "current"),
    ]
    ins = backend.inspect(sid)
    assert data(ins, 11)["reason"] == {"kind": "aborted", "reason": {"kind": "user"}}
    assert data(ins, 12)["source"] == {
        "kind": "plugin",
        "plugin": "gemini-cli",
        "placeholder": True,
    }
    assert ids(backend, sid) == ["u1", "g1", "placeholder-12"]
    assert reasons(backend, sid) == ["placeholder"]


def test_rewind_shadows_the_abandoned_branch_and_an_unknown_target_clears_all(tmp_path):
    backend, sid, _ = mount(tmp_path, "rewind.jsonl")
    got = {r[0]: r for r in rows(backend, sid)}
    assert got[12][1] == "gemini/rewind"
    assert got[16] == (16, "user/message", R(9, 11), [9, 11, 12], "shadowed")  # u3 over u2, g2
    assert got[19][1] == "gemini/rewind"
    assert got[23] == (23, "user/message", R(2, 18), [2, 5, 16, 18, 19], "current")
    assert ids(backend, sid) == ["u4"]


def test_masking_is_a_tool_result_rewrite(tmp_path):
    backend, sid, _ = mount(tmp_path, "masking.jsonl")
    got = {r[0]: r for r in rows(backend, sid)}
    assert got[16][1] == "gemini/set"
    assert got[17] == (17, "tool/result", R(7, 7), [7, 16], "current")
    ins = backend.inspect(sid)
    old, new = data(ins, 7), data(ins, 17)
    assert new["import"] == old["import"] == {"line": 3}  # only the content may differ (§2.1)
    assert new["message"]["content"][0]["content"] == [
        {"type": "text", "text": "[masked: 60 characters]"}
    ]
    assert {k: v for k, v in new.items() if k != "message"} == {
        k: v for k, v in old.items() if k != "message"
    }
    assert ids(backend, sid) == ["u1", "g1", "g1#1", "g2", "u3"]


def test_resume_rewrites_only_the_environment_context(tmp_path):
    backend, sid, _ = mount(tmp_path, "resume.jsonl")
    got = rows(backend, sid)
    replaces = [r for r in got if isinstance(r[2], dict)]
    assert replaces == [(17, "user/message", R(2, 2), [2, 16], "current")]
    assert ids(backend, sid) == ["env", "u1", "g1", "g1#1", "g1#2", "g2", "u3"]
    ins = backend.inspect(sid)
    assert "2026-01-03" in data(ins, 17)["content"][0]["text"]
    assert [e.type for e in ins.events].count("gemini/set") == 3


def test_growth_appends_and_a_tokens_only_record_is_an_update(tmp_path):
    backend, sid, _ = mount(tmp_path, "growth.jsonl")
    got = rows(backend, sid)
    assert [r[1] for r in got[4:12]] == [
        "step/start",
        "assistant/message",
        "gemini/update",
        "assistant/message",
        "tool/call",
        "tool/result",
        "gemini/response-copy",
        "step/end",
    ]
    ins = backend.inspect(sid)
    assert "usage" not in data(ins, 5)  # recorded before its tokens: none on the step
    assert data(ins, 6)["record"]["tokens"]["input"] == 900
    assert data(ins, 7)["step"] == data(ins, 5)["step"] == 1  # one response, one step
    assert data(ins, 9)["step"] == 1 and got[9][3] == [8]
    assert reasons(backend, sid) == []


def test_usage_is_the_recorded_tokens_on_the_first_assistant_event(tmp_path):
    backend, sid, path = mount(tmp_path, "usage.jsonl")
    ins = backend.inspect(sid)
    [step] = [e for e in ins.events if e.type == "assistant/message"]
    tokens = json.loads(path.read_text().splitlines()[2])["tokens"]
    assert step.data()["usage"] == tokens
    # importers.md §7.5 works its views.md rule out on exactly these tokens
    doc = (DOCS / "importers.md").read_text()
    documented = "{" + doc[doc.index("### 7.5") :].split("For `{", 1)[1].split("`", 1)[0]
    assert json.loads(documented.replace("\n", "")) == tokens


def test_a_torn_tail_is_ignored_until_it_is_complete(tmp_path):
    backend, sid, path = mount(tmp_path, "torn-tail.jsonl")
    assert ids(backend, sid) == ["u1", "g1"]
    assert reasons(backend, sid) == []
    with open(path, "ab") as f:
        f.write(b'shed"}]}\n')
    assert ids(backend, sid) == ["u1", "g1", "u2"]


def test_garbled_lines_are_bad_segments_and_the_session_stays_readable(tmp_path):
    backend, sid, _ = mount(tmp_path, "garbled.jsonl")
    ins = backend.inspect(sid)
    bad = [e.data() for e in ins.events if e.type == "import/bad-line"]
    assert [b["preview"] for b in bad] == ["not json at all", '{"id":"g1","timest']
    assert ids(backend, sid) == ["u1", "g1"]
    assert reasons(backend, sid) == ["damaged-lines"]


def test_unknown_records_and_notices_are_opaque_and_log_only(tmp_path):
    backend, sid, _ = mount(tmp_path, "unknown.jsonl")
    got = rows(backend, sid)
    assert [r[1] for r in got if r[4] == "log-only" and r[1].startswith("gemini/")] == [
        "gemini/session",
        "gemini/record",
        "gemini/note",
        "gemini/info",
        "gemini/warning",
        "gemini/error",
    ]
    assert ids(backend, sid) == ["u1", "g1"]
    ins = backend.inspect(sid)
    assert data(ins, 4)["record"] == {"$future": {"x": 1}}


def test_non_ascii_text_and_titles_are_kept(tmp_path):
    backend, sid, _ = mount(tmp_path, "non-ascii.jsonl")
    ins = backend.inspect(sid)
    checked(ins, sid)
    texts = [e.data() for e in ins.events if e.type == "user/message"]
    assert texts[0]["content"][0]["text"] == "Résumé du fichier 文件 📁 — שלום"
    titles = [e.data()["title"] for e in ins.events if e.type == "session/title"]
    assert titles == ["Résumé du fichier 文件 📁 — שלום", "Résumé 文件 📁"]


def test_results_only_in_tool_calls_mean_compression_went_unrecorded(tmp_path):
    backend, sid, _ = mount(tmp_path, "unrecorded.jsonl")
    assert ids(backend, sid) == ["u1", "g1", "g1#1", "g2"]
    assert reasons(backend, sid) == ["unrecorded-compression"]


def test_binary_content_recorded_as_info_is_named(tmp_path):
    backend, sid, _ = mount(tmp_path, "binary-info.jsonl")
    assert ids(backend, sid) == ["u1", "g1", "g1#1", "g2"]
    assert reasons(backend, sid) == ["binary-info"]


def test_a_json_document_maps_in_order_with_message_provenance(tmp_path):
    backend, sid, _ = mount(tmp_path, "document.json")
    ins = backend.inspect(sid)
    checked(ins, sid)
    assert ids(backend, sid) == ["u1", "g1", "g1#1", "g1#2", "g2"]
    by_id = {
        (e.data() if e.type == "user/message" else e.data()["message"])["id"]: e.data()
        for e in ins.events
        if e.type in ("user/message", "assistant/message", "tool/result")
    }
    assert by_id["u1"]["import"] == {"message": 0}
    assert by_id["g1#2"]["import"] == {"message": 1}
    assert by_id["g2"]["usage"]["input"] == 300
    assert by_id["g1"]["message"]["content"] == [{"type": "reasoning", "text": "**Plan** run ls"}]
    title = [e for e in ins.events if e.type == "session/title"][-1]
    assert title.data()["title"] == "List the files" and title.time == 1767312009000
    assert ins.meta.to_value()["source"]["approximate"] == ["unrecorded-compression"]
    assert [e.type for e in ins.events].count("gemini/info") == 1


def test_windows_equal_the_full_inspect_for_both_formats(tmp_path):
    for name in ("masking.jsonl", "document.json"):
        backend, sid, _ = mount(tmp_path / name, name)
        full = backend.inspect(sid).events
        for first, last in ((0, 3), (2, 9), (5, len(full) - 1), (0, 10_000)):
            window = backend.inspect_window(sid, first, last)
            assert window.events == full[first : last + 1] and window.length == len(full)


def _large(turns: int) -> bytes:
    """A 0.44 session: per turn a prompt, a response recorded then grown by a tool call, the
    response message and an answer, each followed by its $set lastUpdated."""
    out = [{"sessionId": "big", "projectHash": "h", "startTime": "2026-01-01T00:00:00.000Z"}]
    for t in range(turns):
        stamp = f"2026-01-01T{t // 3600 % 24:02d}:{t // 60 % 60:02d}:{t % 60:02d}.000Z"
        call = {
            "id": f"c{t}",
            "name": "read_file",
            "args": {"path": f"f{t}.py"},
            "result": [
                {
                    "functionResponse": {
                        "id": f"c{t}",
                        "name": "read_file",
                        "response": {"output": f"line {t}"},
                    }
                }
            ],
            "status": "success",
            "timestamp": stamp,
        }
        g = {
            "id": f"g{t}",
            "timestamp": stamp,
            "type": "gemini",
            "content": f"reading {t}",
            "thoughts": [],
            "tokens": {"input": t, "output": 1, "cached": 0, "total": t + 1},
            "model": "gemini-2.5-pro",
        }
        out += [
            {
                "id": f"u{t}",
                "timestamp": stamp,
                "type": "user",
                "content": [{"text": f"read file {t}"}],
            },
            {"$set": {"lastUpdated": stamp}},
            g,
            {**g, "toolCalls": [call]},
            {"id": f"r{t}", "timestamp": stamp, "type": "user", "content": call["result"]},
            {
                "id": f"a{t}",
                "timestamp": stamp,
                "type": "gemini",
                "content": f"done {t}",
                "thoughts": [],
                "tokens": None,
                "model": "gemini-2.5-pro",
            },
            {"$set": {"lastUpdated": stamp}},
        ]
    return b"".join(json.dumps(r, separators=(",", ":")).encode() + b"\n" for r in out)


@pytest.mark.slow
def test_a_session_of_twenty_thousand_events(tmp_path):
    home = tmp_path / ".gemini"
    chats = home / "tmp/w/chats"
    chats.mkdir(parents=True)
    (chats / "session-2026-01-01T00-00-big.jsonl").write_bytes(_large(1400))
    backend = GeminiBackend(str(home), "gemini:test")
    ins = backend.inspect("big")
    assert len(ins.events) >= 20_000
    classes = checked(ins, "big")
    assert classes.count("current") == 1400 * 5  # prompt, text, call, result, answer
    assert ids(backend, "big")[:5] == ["u0", "g0", "g0#1", "g0#2", "a0"]
    middle = len(ins.events) // 2
    assert (
        backend.inspect_window("big", middle - 50, middle + 50).events
        == ins.events[middle - 50 : middle + 51]
    )


@pytest.mark.parametrize("name", sorted(p.name for p in RULES.iterdir()))
def test_every_rule_fixture_replays_and_folds(tmp_path, name):
    backend, sid, _ = mount(tmp_path, name)
    ins = backend.inspect(sid)
    checked(ins, sid)
    assert ins.meta.to_value()["cwd"] == "/w"
