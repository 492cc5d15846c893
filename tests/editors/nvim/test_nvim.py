"""The Neovim client (editor/nvim) in a real headless Neovim against the real server.

Each scenario is one `nvim --headless --clean -u NONE` run: it loads the plugin from
editor/nvim, runs the :Dsh* commands (and presses <CR> / R in the tree buffers), and writes the
buffers' text and captured notifications to stdout as one JSON document. The tests then check
that text. Scenarios:

* demo: `python -m dsh_query_server --demo` through the default connection path
  (vim.lsp.start on Neovim 0.8+, vim.lsp.start_client on 0.7);
* jsonl: a dsh JSONL root written here, mounted through `init_options.persistence`, with the
  start_client path forced by `use_start_client = true` (so both paths run on any Neovim);
* bad config: an invalid init option surfaces as a notification with its data.code.

Neovim comes from Debian (`make test` installs it through mk/nvim.mk). Set DSH_QUERY_TEST_NVIM to
a list of nvim binaries (os.pathsep-separated) to run every scenario on each of them, e.g. a
0.11 build next to Debian's 0.7.2.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.builders import write_transcript
from tests.editors.nvim.nvim_helpers import BINARIES, run_nvim

pytestmark = pytest.mark.skipif(
    not BINARIES, reason="nvim is not installed (make test installs it: mk/nvim.mk)"
)


def lines(result: dict, name: str) -> list[str]:
    """A snapshot's lines without the `{{{N` / `}}}N` fold markers."""
    assert name in result["snaps"], f"no snapshot {name}: {sorted(result['snaps'])}"
    return [re.sub(r" (\{\{\{|\}\}\})\d+$", "", line) for line in result["snaps"][name]]


def line_with(result: dict, name: str, needle: str) -> str:
    found = [line for line in lines(result, name) if needle in line]
    assert found, f"{needle!r} not in {name}:\n" + "\n".join(lines(result, name))
    return found[0]


def indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


# -- scenario 1: the demo corpus, default connection path ------------------------------------------

DEMO = r"""
-- sessions, then expand one with a real <CR> keypress, and its Lineage group through the Lua API
local sessions = cmd("DshSessions")
snap("sessions", sessions)
local win = vim.api.nvim_get_current_win()
R.buffer = { buftype = vim.bo[sessions].buftype, bufhidden = vim.bo[sessions].bufhidden,
             modifiable = vim.bo[sessions].modifiable, filetype = vim.bo[sessions].filetype,
             foldmethod = vim.wo[win].foldmethod, name = vim.api.nvim_buf_get_name(sessions) }
-- "t" on a session: its lineage
goto_line(sessions, "try-freezegun:")
press("t")
R.t_opens = vim.api.nvim_buf_get_name(0)
vim.api.nvim_set_current_win(win)
goto_line(sessions, "fix-flaky-tests:")
press("<CR>")
snap("sessions_expanded", sessions)
tree.activate(sessions, goto_line(sessions, "Lineage"))
wait()
snap("sessions_lineage", sessions)

-- didChange: a producer adds a session; the open tree turns stale; R refreshes it
dq.request("sessionStore/create", { header = { version = 0, id = "added-from-nvim", createdAt = 1764470000000 } })
wait()
R.checks.stale_seen = vim.wait(5000, function()
  return (vim.api.nvim_buf_get_lines(sessions, 0, 1, false)[1] or ""):find("stale", 1, true) ~= nil
end, 20)
snap("sessions_stale", sessions)
vim.api.nvim_set_current_buf(sessions)
press("R")
snap("sessions_refreshed", sessions)
vim.cmd("silent! only")

local events = cmd("DshEvents fix-flaky-tests")
snap("events", events)
-- the compaction summary replaced the first exchange: trace it
local summary = vim.api.nvim_buf_get_lines(events, tree.find(events, '"Summary so far') - 1, tree.find(events, '"Summary so far'), false)[1]
R.summary_seq = tonumber(summary:match("#(%d+)"))
vim.cmd("silent! only")

snap("lineage", cmd("DshTrace fix-flaky-tests"))
snap("lineage_deep", cmd("DshTrace read-refunds"))
vim.cmd("silent! only")

local trace = cmd("DshTrace fix-flaky-tests " .. R.summary_seq)
snap("trace", trace)
-- <CR> on a linked event (first child of "Sources") opens its event window in a split
local sources = tree.find(trace, "Sources")
vim.api.nvim_win_set_cursor(0, { sources + 1, 0 })
press("<CR>")
R.from_tree_name = vim.api.nvim_buf_get_name(0)
snap("read_from_tree")
vim.cmd("silent! only")

local read = cmd("DshRead fix-flaky-tests " .. R.summary_seq)
snap("read", read)
R.read_cursor = vim.api.nvim_buf_get_lines(read, vim.api.nvim_win_get_cursor(0)[1] - 1, vim.api.nvim_win_get_cursor(0)[1], false)[1]
press("q") -- closes the window; bufhidden=wipe wipes the buffer
R.checks.read_wiped_by_q = not vim.api.nvim_buf_is_valid(read)
vim.cmd("silent! only")

local search = cmd("DshSearch fake clock")
snap("search", search)
goto_line(search, "fix-flaky-tests #")
press("<CR>")
snap("search_open")
vim.cmd("silent! only")

-- paging: one hit per page, the "More…" node expands to the next page (nextCursor)
require("dsh_query.config").options.search_limit = 1
local paged = cmd("DshSearch fake clock")
snap("search_page1", paged)
goto_line(paged, "More…")
press("<CR>")
snap("search_page2", paged)
require("dsh_query.config").options.search_limit = nil
vim.cmd("silent! only")

-- errors: a failed request is a notification with data.code; inside a view it is an error node
snap("read_missing", cmd("DshRead no-such-session 0"))
snap("events_missing", cmd("DshEvents no-such-session"))
R.completion = dq.complete_sessions("fix")
"""


@pytest.fixture(scope="module", params=BINARIES or ["nvim"])
def nvim(request):
    return request.param


@pytest.fixture(scope="module")
def demo(nvim, tmp_path_factory):
    return run_nvim(
        nvim,
        tmp_path_factory.mktemp("nvim-demo"),
        DEMO,
        server_args=["--demo"],
        init={"index": ":memory:"},
    )


def test_default_connection_path(demo):
    expected = "start" if demo["has_lsp_start"] else "start_client"
    assert demo["info"]["path"] == expected, demo["version"]
    assert demo["info"]["ready"] is True


def test_sessions_lists_ids_with_icons(demo):
    text = lines(demo, "sessions")
    assert text[0].startswith("dsh-query · Sessions")
    assert line_with(demo, "sessions", "fix-flaky-tests:").startswith(
        "▸ ● fix-flaky-tests: Flaky payment retry tests"
    )
    assert "lagging" in line_with(demo, "sessions", "fix-flaky-tests:")
    assert line_with(demo, "sessions", "release-notes-2-4:").startswith("▸ ◷ ")  # persisted only
    assert line_with(demo, "sessions", "try-freezegun:").startswith("▸ ↳ ")  # a fork
    for sid in ("scratch", "dark-mode-contrast", "try-freezegun"):
        line_with(demo, "sessions", sid + ":")
    # sub-agents are not listed at the top: they sit under their parent
    for sid in ("explore-retry-policy", "read-refunds"):
        assert not any(sid in line for line in lines(demo, "sessions")), sid
    # nothing is expanded yet: no fold markers
    assert not any("{{{" in raw or "}}}" in raw for raw in demo["snaps"]["sessions"])


def test_tree_buffer_is_a_scratch_buffer(demo):
    assert demo["buffer"] == {
        "buftype": "nofile",
        "bufhidden": "wipe",
        "modifiable": False,
        "filetype": "dshquery",
        "foldmethod": "marker",
        "name": "dsh-query://sessions",
    }
    assert demo["t_opens"] == "dsh-query://lineage/try-freezegun"


def test_expanding_a_session_shows_its_children(demo):
    assert line_with(demo, "sessions_expanded", "fix-flaky-tests:").startswith("▾ ● ")
    events = line_with(demo, "sessions_expanded", "Events")
    lineage = line_with(demo, "sessions_expanded", "Lineage")
    assert events.startswith("  ▸ ≡ Events") and lineage.startswith("  ▸ ⑂ Lineage")
    # then its sub-agent, nested one level deeper and named as one
    sub = line_with(demo, "sessions_expanded", "explore-retry-policy:")
    assert sub.startswith("  ▸ ↳ explore-retry-policy: Map every caller") and "sub-agent" in sub
    text = lines(demo, "sessions_expanded")
    assert text.index(lineage) + 1 == text.index(sub)
    # the expanded session opens a fold on its line and its last child closes it (concealed)
    raw = demo["snaps"]["sessions_expanded"]
    assert [line for line in raw if re.search(r"(\{\{\{|\}\}\})\d$", line)] == [
        next(line for line in raw if "fix-flaky-tests:" in line and line.endswith(" {{{1")),
        next(line for line in raw if "explore-retry-policy:" in line and line.endswith(" }}}1")),
    ]
    # the Lineage group lists the sub-agent and the fork, one level deeper
    text = lines(demo, "sessions_lineage")
    group = text.index(line_with(demo, "sessions_lineage", "Lineage"))
    assert text[group].startswith("  ▾ ⑂ Lineage")
    links = text[group + 1 : group + 3]
    assert [indent(line) for line in links] == [6, 6]  # depth 2, no expand glyph (leaves)
    assert any("explore-retry-policy:" in line and "sub-agent" in line for line in links), links
    assert any("try-freezegun:" in line for line in links), links


def test_did_change_marks_tree_stale_and_R_refreshes(demo):
    assert demo["checks"]["stale_seen"] is True
    assert "[stale: press R to refresh]" in lines(demo, "sessions_stale")[0]
    assert not any("added-from-nvim" in line for line in lines(demo, "sessions_stale"))
    refreshed = lines(demo, "sessions_refreshed")
    assert "stale" not in refreshed[0]
    assert any(line.startswith("▸ ● added-from-nvim") for line in refreshed)
    # expansion survives the refresh (stable node ids)
    assert line_with(demo, "sessions_refreshed", "fix-flaky-tests:").startswith("▾ ")
    line_with(demo, "sessions_refreshed", "explore-retry-policy:")


def test_events_show_surface_status(demo):
    text = lines(demo, "events")
    assert text[0] == "dsh-query · Events of fix-flaky-tests"
    first = line_with(demo, "events", "#1 user/message")
    assert first.lstrip().startswith("⊘ ") and "shadowed" in first  # replaced by the compaction
    summary = line_with(demo, "events", '"Summary so far')
    assert summary.lstrip().startswith("● ") and "current" in summary
    chunk = line_with(demo, "events", "assistant/chunk")
    assert chunk.lstrip().startswith("○ ") and "log-only" in chunk


def test_trace_shows_lineage_with_sub_agent(demo):
    target = line_with(demo, "lineage", "fix-flaky-tests:")
    assert "target" in target and target.startswith("▾ ")
    sub = line_with(demo, "lineage", "explore-retry-policy:")
    assert indent(sub) > indent(target) and "↳" in sub and "sub-agent" in sub
    # a deeper target: root and parent above it
    deep = lines(demo, "lineage_deep")
    root = line_with(demo, "lineage_deep", "fix-flaky-tests:")
    parent = line_with(demo, "lineage_deep", "explore-retry-policy:")
    me = line_with(demo, "lineage_deep", "read-refunds:")
    assert "root" in root and "parent" in parent and "target" in me
    assert deep.index(root) < deep.index(parent) < deep.index(me)


def test_trace_with_seq_shows_groups(demo):
    seq = demo["summary_seq"]
    assert lines(demo, "trace")[0] == f"dsh-query · Trace of #{seq} in fix-flaky-tests"
    target = line_with(demo, "trace", f"#{seq} user/message")
    assert "target" in target
    for group in (
        "Replaced by",
        "Replacement chain",
        "Replaced events",
        "Sources",
        "Derived events",
    ):
        line_with(demo, "trace", group)
    assert "(none)" in line_with(demo, "trace", "Replaced by")
    sources = line_with(demo, "trace", "Sources")
    assert sources.startswith("▾ ←")  # expanded by the server, children fetched at once
    text = lines(demo, "trace")
    linked = text[text.index(sources) + 1]
    assert indent(linked) == 4 and re.search(r"#\d+ user/message", linked)  # a leaf at depth 1
    replaced = line_with(demo, "trace", "Replaced events")
    assert replaced.startswith("▾ ⇉") and text[text.index(replaced) + 1].lstrip().startswith("⊘ ")


def test_enter_on_linked_event_opens_event_window(demo):
    assert demo["from_tree_name"].startswith("dsh-query://event/fix-flaky-tests/")
    text = lines(demo, "read_from_tree")
    assert any(line.startswith("// >>> #") and line.endswith("(target)") for line in text)


def test_read_shows_window_json_with_target_marked(demo):
    seq = demo["summary_seq"]
    text = lines(demo, "read")
    assert text[0].startswith('// dsh-query event window · session "fix-flaky-tests"')
    start = text.index(f"// >>> #{seq} user/message  (target)")
    end = text.index(f"// <<< end of target #{seq}")
    block = json.loads("\n".join(text[start + 1 : end]))
    assert block["seq"] == seq and block["type"] == "user/message"
    assert block["surfaceOp"] == {"op": "replace", "start": 1, "end": block["surfaceOp"]["end"]}
    assert "Summary so far" in block["data"]["content"][0]["text"]
    assert (
        text[start + 1] == "{" and text[start + 2] == '  "type": "user/message",'
    )  # pretty, envelope first
    # the neighbours are there too (before = after = 2), each valid JSON under its comment
    headers = [line for line in text if re.match(r"// (>>> )?#\d+ ", line)]
    assert len(headers) == 5
    assert (
        demo["read_cursor"] == f"// >>> #{seq} user/message  (target)"
    )  # the cursor lands on the target
    assert demo["checks"]["read_wiped_by_q"] is True


def first_group(pattern: str, text: str) -> str:
    match = re.search(pattern, text)
    assert match is not None, (pattern, text)
    return match.group(1)


def test_search_finds_a_phrase_and_opens_the_hit(demo):
    text = lines(demo, "search")
    assert text[0] == 'dsh-query · Search "fake clock"'
    hit = line_with(demo, "search", "fix-flaky-tests #")
    assert "fake clock" in hit and hit.lstrip().startswith("● ")
    line_with(demo, "search", "try-freezegun #")
    seq = first_group(r"fix-flaky-tests #(\d+)", hit)
    assert f"// >>> #{seq} assistant/message  (target)" in lines(demo, "search_open")


def test_search_pages_through_more_node(demo):
    first = lines(demo, "search_page1")
    hits = [line for line in first if " assistant/message " in line]
    assert len(hits) == 1 and first[-1].startswith("▸ … More…")
    second = lines(demo, "search_page2")
    assert second[-2].startswith("▾ … More…") and indent(second[-1]) == 4
    assert {first_group(r"([\w-]+) #\d+", line) for line in (hits[0], second[-1])} == {
        "fix-flaky-tests",
        "try-freezegun",
    }


def test_errors_are_notified_with_their_code(demo):
    notes = [n["msg"] for n in demo["notes"]]
    assert any("SESSION_QUERY_SESSION_NOT_FOUND" in n and "no-such-session" in n for n in notes), (
        notes
    )
    assert "SESSION_QUERY_SESSION_NOT_FOUND" in "\n".join(lines(demo, "read_missing"))
    # inside a view, the failure is an error node (protocol.md §6)
    node = line_with(demo, "events_missing", "✗")
    assert 'session "no-such-session" not found' in node and node.endswith(
        "SESSION_QUERY_SESSION_NOT_FOUND"
    )


def test_session_completion(demo):
    assert demo["completion"] == ["fix-flaky-tests"]


# -- scenario 2: a JSONL root written here, start_client forced ------------------------------------


def user(seq: int, text: str, **envelope) -> dict:
    return {
        "type": "user/message",
        "seq": seq,
        "time": 1_700_000_000_000 + seq,
        "surfaceOp": "append",
        "data": {
            "id": f"u{seq}-{abs(hash(text))}",
            "role": "user",
            "source": {"kind": "user"},
            "content": [{"type": "text", "text": text}],
        },
        **envelope,
    }


def assistant(seq: int, text: str) -> dict:
    return {
        "type": "assistant/message",
        "seq": seq,
        "time": 1_700_000_000_000 + seq,
        "surfaceOp": "append",
        "data": {
            "turn": 1,
            "step": 1,
            "message": {
                "id": f"a{seq}-{abs(hash(text))}",
                "role": "assistant",
                "content": [{"type": "text", "text": text}],
                "source": {"kind": "model", "provider": "deepseek", "model": "deepseek-chat"},
            },
        },
    }


JSONL = r"""
local sessions = cmd("DshSessions")
snap("sessions", sessions)
goto_line(sessions, "parent-session:")
press("<CR>")
goto_line(sessions, "child-agent:")
press("<CR>")
snap("sessions_expanded", sessions)
vim.cmd("silent! only")
snap("events", cmd("DshEvents parent-session"))
snap("trace", cmd("DshTrace parent-session 0"))
vim.cmd("silent! only")
snap("lineage", cmd("DshTrace child-agent"))
snap("orphan", cmd("DshTrace orphan"))
vim.cmd("silent! only")
local search = cmd("DshSearch blue marble")
snap("search", search)
goto_line(search, "child-agent #")
press("<CR>")
snap("search_open")
"""


@pytest.fixture(scope="module")
def jsonl(nvim, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("nvim-jsonl")
    root = tmp / "root"
    write_transcript(
        root,
        {"version": 0, "id": "parent-session", "createdAt": 1_700_000_000_000, "cwd": "/proj"},
        [
            user(0, "please find the needle in the haystack"),
            assistant(1, "searching the haystack now"),
            user(
                2,
                "summary: the haystack was searched",
                surfaceOp={"op": "replace", "start": 0, "end": 1},
                sourceEventSeqs=[0, 1],
            ),
        ],
    )
    write_transcript(
        root,
        {
            "version": 0,
            "id": "child-agent",
            "createdAt": 1_700_000_100_000,
            "cwd": "/proj",
            "parentSession": "parent-session",
            "origin": "subagent",
            "delegationDepth": 1,
        },
        [
            user(0, "look under the sofa"),
            assistant(1, "found a blue marble under the sofa"),
        ],
    )
    write_transcript(
        root,
        {"version": 0, "id": "orphan", "createdAt": 1_700_000_200_000, "parentSession": "ghost"},
        [user(0, "who is my parent")],
    )
    return run_nvim(
        nvim,
        tmp,
        JSONL,
        server_args=["--persistence", "none"],
        init={"persistence": f"jsonl:{root}", "index": ":memory:"},
        force_start_client=True,
    )


def test_forced_start_client_path(jsonl):
    assert jsonl["info"]["path"] == "start_client"


def test_jsonl_sessions_are_persisted_only(jsonl):
    for sid in ("parent-session", "orphan"):
        line = line_with(jsonl, "sessions", sid + ":")
        assert "persisted" in line and "live" not in line
    assert line_with(jsonl, "sessions", "parent-session:").startswith("▸ ◷ ")
    # the orphan names a parent that is not in the corpus: it stays at the top
    assert line_with(jsonl, "sessions", "orphan:").startswith("▸ ↳ ")
    assert not any("child-agent" in line for line in lines(jsonl, "sessions"))
    # the sub-agent sits under its parent, and expands to its own groups
    expanded = lines(jsonl, "sessions_expanded")
    child = line_with(jsonl, "sessions_expanded", "child-agent:")
    assert child.startswith("  ▾ ↳ ") and "sub-agent" in child and "persisted" in child
    assert expanded[expanded.index(child) + 1].startswith("    ▸ ≡ Events")


def test_jsonl_events_and_trace(jsonl):
    assert "shadowed" in line_with(jsonl, "events", "#0 user/message")
    assert "shadowed" in line_with(jsonl, "events", "#1 assistant/message")
    assert "current" in line_with(jsonl, "events", "#2 user/message")
    text = lines(jsonl, "trace")
    replaced_by = line_with(jsonl, "trace", "Replaced by")
    assert replaced_by.startswith("▾ ⇄") and "#2 user/message" in text[text.index(replaced_by) + 1]


def test_jsonl_lineage_and_unresolved_parent(jsonl):
    text = lines(jsonl, "lineage")
    parent = line_with(jsonl, "lineage", "parent-session:")
    me = line_with(jsonl, "lineage", "child-agent:")
    assert "target" in me and text.index(parent) < text.index(me)
    assert line_with(jsonl, "orphan", 'parent "ghost" not in corpus').lstrip().startswith("! ")


def test_jsonl_search(jsonl):
    hit = line_with(jsonl, "search", "child-agent #1 assistant/message")
    assert "blue marble" in hit
    assert "// >>> #1 assistant/message  (target)" in lines(jsonl, "search_open")


# -- scenario 2b: sessions of other agents (importers.md §0.8 source) and groupings ----------------

AGENTS = r"""
local function create(id, t, extra)
  local h = { version = 0, id = id, createdAt = 1764470000000 + t }
  for k, v in pairs(extra or {}) do h[k] = v end
  dq.request("sessionStore/create", { header = h })
  wait()
end
create("dsh-one", 0, { cwd = "/work/app" })
create("claude-one", 1000, { cwd = "/work/app", source = { agent = "claude-code", agentVersion = "2.1.38",
                                                           path = "/h/.claude/projects/p/claude-one.jsonl" } })
create("codex-one", 2000, { cwd = "/work/lib", source = { agent = "codex", path = "/h/.codex/x.jsonl" } })
snap("sessions", cmd("DshSessions"))
vim.cmd("silent! only")
local by_agent = cmd("DshSessions agent")
snap("by_agent", by_agent)
R.by_agent_name = vim.api.nvim_buf_get_name(by_agent)
goto_line(by_agent, "claude-code")
press("<CR>")
snap("by_agent_expanded", by_agent)
vim.cmd("silent! only")
snap("by_workspace", cmd("DshSessions workspace"))
vim.cmd("silent! only")
vim.cmd("DshSessions model")
R.completion = vim.fn.getcompletion("DshSessions ", "cmdline")
"""


@pytest.fixture(scope="module")
def agents(nvim, tmp_path_factory):
    return run_nvim(
        nvim,
        tmp_path_factory.mktemp("nvim-agents"),
        AGENTS,
        server_args=["--persistence", "none"],
        init={"index": ":memory:"},
    )


def test_sessions_show_an_agent_column(agents):
    # newest first; the column is as wide as the longest agent, so labels line up
    assert [line.split()[2] for line in lines(agents, "sessions")[2:]] == [
        "codex",
        "claude-code",
        "dsh",
    ]
    assert line_with(agents, "sessions", "codex-one").startswith("▸ ⚙ codex       codex-one")
    assert line_with(agents, "sessions", "claude-one").startswith("▸ ✦ claude-code claude-one")
    assert line_with(agents, "sessions", "dsh-one").startswith("▸ ● dsh         dsh-one")
    assert "claude-code · " in line_with(agents, "sessions", "claude-one")


def test_sessions_grouped_by_agent_and_by_workspace(agents):
    assert agents["by_agent_name"] == "dsh-query://sessions/by-agent"
    assert lines(agents, "by_agent")[0].startswith("dsh-query · Sessions by agent")
    groups = lines(agents, "by_agent")[2:]
    assert groups == ["▸ ⚙ codex  1 session", "▸ ✦ claude-code  1 session", "▸ ◷ dsh  1 session"]
    expanded = lines(agents, "by_agent_expanded")[2:]
    assert expanded[1] == "▾ ✦ claude-code  1 session"
    assert expanded[2].startswith("  ▸ ✦ claude-code claude-one")
    assert lines(agents, "by_workspace")[2:] == [
        "▸ ▤ lib  1 session · /work",
        "▸ ▤ app  2 sessions · /work",
    ]
    assert any("usage: :DshSessions [agent|workspace|none]" in n["msg"] for n in agents["notes"])
    assert agents["completion"] == ["agent", "workspace", "none"]


# -- scenario 3: a bad init option --------------------------------------------------------------

BAD = r"""
local sessions = cmd("DshSessions")
snap("sessions", sessions)
"""


def test_invalid_init_option_is_reported(nvim, tmp_path):
    result = run_nvim(
        nvim,
        tmp_path,
        BAD,
        server_args=["--persistence", "none"],
        init={"index": ":memory:", "readWindowMax": "lots"},
    )
    notes = "\n".join(n["msg"] for n in result["notes"])
    assert "SESSION_QUERY_INVALID_CONFIG" in notes, notes
    # the tree does not hang: its roots show the failure
    assert lines(result, "sessions")[2].lstrip().startswith("✗ ")


# -- scenario 4: :DshUsage over a Claude Code home (docs/usage.md §5) ------------------------------

USAGE = r"""
snap("usage_day", cmd("DshUsage"))
vim.cmd("silent! only")
snap("usage_model", cmd("DshUsage model"))
vim.cmd("silent! only")
vim.cmd("DshUsage year")
R.usage_completion = vim.fn.getcompletion("DshUsage m", "cmdline")
"""


@pytest.fixture(scope="module")
def usage(nvim, tmp_path_factory):
    from tests.import_helpers import jl, write_home
    from tests.query.test_usage_service import DUPLICATES, TRUNK, anthropic, response, user

    tmp = tmp_path_factory.mktemp("nvim-usage")
    other = "0b0b0b0b-0000-4000-8000-00000000000a"
    unknown = jl(
        user("u1", None, "hi", 1, sid=other),
        response("a1", "u1", "m1", 2, anthropic(100, 50), sid=other, model="house-model"),
    )
    home = write_home(
        tmp / "claude",
        {f"projects/-w/{TRUNK}.jsonl": DUPLICATES, f"projects/-w/{other}.jsonl": unknown},
    )
    return run_nvim(
        nvim,
        tmp,
        USAGE,
        server_args=["--persistence", "none"],
        init={"persistence": f"claude:{home}", "index": ":memory:"},
    )


def test_usage_shows_the_table_with_totals_and_no_price(usage):
    day = lines(usage, "usage_day")
    assert day[0] == "Usage by day (UTC) · R re-read · q close"
    assert day[1].split()[:3] == ["day", "resp", "input"]
    row = line_with(usage, "usage_day", "2026-01-01")
    # both sessions answered on 2026-01-01: 3 responses, input 4 + 100, and one has no price
    assert row.split()[:7] == ["2026-01-01", "3", "104", "1900", "100", "97", "$0.0017*"]
    assert row.endswith("#" * 10)
    total = line_with(usage, "usage_day", "total (2 sessions)")
    assert total.split()[3:9] == ["3", "104", "1900", "100", "97", "$0.0017*"]
    assert "1 responses have no price (house-model)" in "\n".join(day)
    models = lines(usage, "usage_model")
    assert models[0].startswith("Usage by model")
    assert "   no price #" in line_with(usage, "usage_model", "house-model")
    assert any(":DshUsage takes one of day, week" in n["msg"] for n in usage["notes"])
    assert usage["usage_completion"] == ["month", "model"]
