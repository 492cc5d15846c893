"""Ids as the CLI shows and takes them (cli/ids.py): every shown prefix resolves back to its id."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_query_server.cli.ids import MIN_PREFIX, AmbiguousId, resolve_id, short_ids
from dsh_query_server.cli.lines import Column, render

# UUIDs that share long prefixes (as UUIDv7 ids of one day do), names, and sub-agent ids.
_hex = st.text("01", min_size=24, max_size=24)  # two digits: long shared prefixes are common
_uuids = _hex.map(lambda h: str(uuid.UUID(hex="019b7e26" + h)))
_ids = st.one_of(
    _uuids, st.text("abc-/", min_size=1, max_size=12), _uuids.map(lambda u: u + "/agent-a1")
)


@settings(max_examples=300, deadline=None)
@given(st.sets(_ids, min_size=1, max_size=40))
def test_every_shown_id_resolves_back_to_its_id(ids):
    short = short_ids(ids)
    for sid, shown in short.items():
        assert sid.startswith(shown)
        assert len(shown) >= min(MIN_PREFIX, len(sid))
        assert resolve_id(shown, ids) == sid
        assert resolve_id(sid, ids) == sid  # the whole id always works


def test_ambiguous_and_unknown_prefixes():
    ids = ["019b7e26-5500-7000-8000-00000000000a", "019b7e26-5500-7100-8000-00000000000b"]
    assert short_ids(ids) == {ids[0]: "019b7e26-5500-70", ids[1]: "019b7e26-5500-71"}
    with pytest.raises(AmbiguousId) as exc:
        resolve_id("019b", ids)
    assert exc.value.candidates == ids and "matches 2 sessions" in str(exc.value)
    assert resolve_id("nope", ids) == "nope"  # the server answers not found


@given(st.lists(st.text(min_size=0, max_size=60), min_size=3, max_size=3), st.integers(20, 120))
def test_rows_fit_the_width_and_stay_one_line(values, width):
    from rich.cells import cell_len

    columns = [Column("id"), Column("title", flexible=True), Column("cwd", flexible=True)]
    lines = render(columns, [values], width)
    assert len(lines) == 2 and all(cell_len(line) <= width and "\n" not in line for line in lines)
