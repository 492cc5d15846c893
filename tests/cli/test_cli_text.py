"""The command line's text pieces, in process: tables fitted to a width (lines.py), events
described for people (describe.py), search matches marked (search.py), seq ranges (render.py)."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st
from rich.cells import cell_len
from rich.text import Text

from dsh_query_server.cli.describe import EMPTY, REASONING, describe
from dsh_query_server.cli.lines import Column, fit, render
from dsh_query_server.cli.render import chain, plural, seq_ranges
from dsh_query_server.cli.search import CLOSE, OPEN, heading, highlight, page_of

_cells = st.text(min_size=0, max_size=60)


@given(st.lists(_cells, min_size=3, max_size=3), st.integers(20, 120))
def test_rows_fit_the_width_and_stay_one_line(values, width):
    columns = [Column("id"), Column("title", flexible=True), Column("cwd", flexible=True)]
    lines = render(columns, [values], width)
    assert len(lines) == 2
    assert all(cell_len(line.plain) <= width and "\n" not in line.plain for line in lines)


@given(
    st.lists(st.lists(_cells, min_size=5, max_size=5), min_size=1, max_size=8), st.integers(1, 250)
)
def test_columns_are_dropped_lowest_rank_first_and_only_when_needed(rows, width):
    columns = [
        Column("id"),
        Column("state", drop=3),
        Column("title", flexible=True, keep=12),
        Column("parent", flexible=True, drop=1),
        Column("cwd", flexible=True, keep=10, drop=2),
    ]
    widths = fit(columns, [[Text(v) for v in r] for r in rows], width)
    dropped = {columns[i].drop for i, w in enumerate(widths) if w is None}
    # Dropping follows the ranks: rank n only after every rank below it.
    assert dropped == set(range(1, len(dropped) + 1))
    kept = [w for w in widths if w is not None]
    used = sum(kept) + 2 * (len(kept) - 1)
    if dropped:  # a column is dropped only when the rest did not fit at their comfortable widths
        assert used <= width or dropped == {1, 2, 3}
    natural = [w or 0 for w in fit(columns, [[Text(v) for v in r] for r in rows], None)]
    if sum(natural) + 2 * 4 <= width:
        assert widths == natural  # a row that fits is not touched
    for line in render(columns, rows, width):
        assert cell_len(line.plain) <= width


def test_the_eighty_column_layout_keeps_the_title_and_drops_the_rest():
    columns = [
        Column("id"),
        Column("agent"),
        Column("created (UTC)"),
        Column("state", drop=3),
        Column("title", flexible=True, keep=24),
        Column("parent", flexible=True, keep=10, drop=1),
        Column("cwd", flexible=True, keep=16, drop=2),
    ]
    row = [
        "491e126e…/agent-a4d5",
        "claude-code",
        "2026-02-10 22:57",
        "persisted",
        "start phoenix in background and check the MCP servers",
        "491e126e",
        "/home/marco/projects/spotter",
    ]
    narrow = [line.plain for line in render(columns, [row], 80)]
    assert narrow[0].split() == ["id", "agent", "created", "(UTC)", "title"]
    assert narrow[1].startswith(
        "491e126e…/agent-a4d5  claude-code  2026-02-10 22:57  start phoenix"
    )
    wide = [line.plain for line in render(columns, [row], 200)]
    assert wide[1].endswith("/home/marco/projects/spotter") and "persisted" in wide[1]


def test_a_cut_search_snippet_keeps_its_match_in_view():
    snippet = "word " * 40 + "needle in the haystack " + "tail " * 20
    text = highlight(snippet, "NEEDLE")
    assert f"{OPEN}needle{CLOSE}" in text.plain
    columns = [Column("session"), Column("snippet", flexible=True, keep=20, focus=True)]
    for width in (40, 60, 80):
        line = render(columns, [["s", text]], width)[1]
        assert f"{OPEN}needle{CLOSE}" in line.plain and cell_len(line.plain) <= width
        assert any(span.style for span in line.spans)  # styled as well as marked


def test_highlight_marks_a_phrase_across_whitespace_and_case():
    text = highlight("a Fake\n  Clock here, and a fake clock there", "fake clock")
    assert text.plain == f"a {OPEN}Fake Clock{CLOSE} here, and a {OPEN}fake clock{CLOSE} there"
    assert highlight("[bold]x[/bold]", "x").plain == f"[bold]{OPEN}x{CLOSE}[/bold]"  # data


def test_headings_count_what_they_show():
    assert plural(1, "hit") == "1 hit" and plural(2, "hit") == "2 hits"
    q = "retry"
    assert heading(q, "session", 1, 1, False) == 'search "retry": 1 matching session'
    assert heading(q, "session", 0, 1, False) == 'search "retry": no matches'
    assert (
        heading(q, "session", 20, 1, True)
        == 'search "retry": 20 matching sessions on page 1; more: --page 2'
    )
    assert (
        heading(q, "event", 3, 2, False) == 'search "retry": 3 matching events on page 2, the last'
    )
    assert heading(q, "event", 0, 4, False) == 'search "retry": no page 4: the hits end before it'


def test_a_cursor_tells_its_page():
    import base64

    def cursor(offset):
        raw = json.dumps({"version": 1, "offset": offset}).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    assert page_of(cursor(40), 20) == 3 and page_of(cursor(0), 20) == 1
    assert page_of("not a cursor!", 20) is None and page_of(cursor(-1), 20) is None


def test_seq_ranges_and_chains():
    assert seq_ranges([]) == "—" and seq_ranges([5]) == "#5"
    assert seq_ranges([7, 8, 9, 12]) == "#7–#9, #12, 4 events"
    many = [s for s in range(7, 947) if s % 5]  # 7–9, 11–14, …, 941–944, 946: 189 runs
    assert seq_ranges(many) == f"#7–#946, {len(many)} events in 189 runs"
    assert chain([17, 18]) == "#17 → #18"
    assert chain(list(range(10))) == "#0 → … → #9, 10 events"


def _event(kind, data):
    return {"type": kind, "seq": 0, "time": 0, "data": data}


def test_events_are_described_as_a_reader_needs():
    call = {"turn": 1, "step": 1, "callId": "c", "name": "Bash"}
    assert (
        describe(_event("tool/call", {**call, "arguments": '{"command":"ls -la"}'}))
        == "Bash: ls -la"
    )
    assert describe(_event("tool/call", {**call, "arguments": '{"a":1}'})) == 'Bash: {"a": 1}'
    assert describe(_event("tool/call", {**call, "arguments": "{}"})) == "Bash"
    assert describe(_event("tool/call", {**call, "arguments": "not json"})) == "Bash: not json"
    message = {"turn": 1, "step": 1, "message": {"content": [{"type": "reasoning", "text": "h"}]}}
    assert describe(_event("assistant/message", message)) == REASONING
    blank = {"turn": 1, "step": 1, "message": {"content": [{"type": "text", "text": "\n\n"}]}}
    assert describe(_event("assistant/message", blank)) == EMPTY
    mixed = {
        "content": [
            {"type": "text", "text": "look"},
            {"type": "tool-call", "id": "c", "name": "Read", "arguments": '{"file_path":"/a"}'},
        ]
    }
    assert describe(_event("assistant/message", {"message": mixed})) == "look\nRead: /a"
    end = {"turn": 2, "reason": {"kind": "error", "error": {"message": "boom"}}}
    assert describe(_event("turn/end", end)) == "turn 2 ended: error (boom)"
    assert describe(_event("step/start", {"turn": 2, "step": 3})) == "step 2.3"
    assert describe(_event("x/unknown", [1, 2])) == ""  # total: an unknown shape says nothing
