"""Ids as the CLI shows and takes them (cli/ids.py): every shown prefix resolves back to its id."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_query_server.cli.ids import ELLIPSIS, MIN_PREFIX, AmbiguousId, resolve_id, short_ids

# UUIDs that share long prefixes (as UUIDv7 ids of one day do), names, and sub-agent ids.
_hex = st.text("01", min_size=24, max_size=24)  # two digits: long shared prefixes are common
_uuids = _hex.map(lambda h: str(uuid.UUID(hex="019b7e26" + h)))
_agents = st.text("01a", min_size=1, max_size=6).map(lambda a: "/agent-" + a)
_ids = st.one_of(_uuids, st.text("abc-/", min_size=1, max_size=12), st.tuples(_uuids, _agents))


@st.composite
def _corpora(draw):
    """Ids and their parentSession links: sub-agents ``<uuid>/agent-…`` under their UUID (or
    under a sibling agent), and random links between any two ids (dsh sub-agents have ids of
    their own)."""
    drawn = draw(st.lists(_ids, min_size=1, max_size=40))
    ids: list[str] = []
    parents: dict[str, str | None] = {}
    for item in drawn:
        sid = item[0] + item[1] if isinstance(item, tuple) else item
        if sid in parents:
            continue
        ids.append(sid)
        parents[sid] = None
        if isinstance(item, tuple):
            siblings = [i for i in ids if i.startswith(item[0] + "/") and i != sid]
            parents[sid] = draw(st.sampled_from([item[0], *siblings]))
    for sid in ids:
        if parents[sid] is None and draw(st.booleans()):
            parents[sid] = draw(st.sampled_from(ids))  # cycles too: the walk must end
    return ids, parents


@settings(max_examples=300, deadline=None)
@given(_corpora())
def test_every_shown_id_resolves_back_to_its_id(corpus):
    ids, parents = corpus
    short = short_ids(ids, parents)
    for sid, shown in short.items():
        assert len(shown) <= len(sid)
        if ELLIPSIS in shown and ELLIPSIS not in sid:
            head, tail = shown.split(ELLIPSIS)
            assert sid.startswith(head) and sid.endswith(sid[36:]) and sid[36:].startswith(tail)
        else:
            assert sid.startswith(shown)
            assert len(shown) >= min(MIN_PREFIX, len(sid))
        assert resolve_id(shown, ids, parents) == sid
        assert resolve_id(sid, ids, parents) == sid  # the whole id always works


def test_ambiguous_and_unknown_prefixes():
    ids = ["019b7e26-5500-7000-8000-00000000000a", "019b7e26-5500-7100-8000-00000000000b"]
    assert short_ids(ids) == {ids[0]: "019b7e26-5500-70", ids[1]: "019b7e26-5500-71"}
    with pytest.raises(AmbiguousId) as exc:
        resolve_id("019b", ids)
    assert exc.value.candidates == ids and "matches 2 sessions" in str(exc.value)
    assert resolve_id("nope", ids) == "nope"  # the server answers not found


def test_a_parent_wins_over_its_own_sub_agents():
    """Issue 25: a Claude parent shares its prefix with its sub-agents (ids <parent>/agent-…);
    the prefix names the parent, and each sub-agent shows as <prefix>…/agent-<a prefix>."""
    parent = "4d56a0b1-1e71-469c-ade2-fcc8af567c74"
    agents = [parent + "/agent-a4d56e0f1b2c3d4e5", parent + "/agent-a4d57aa9c1b2c3d4e"]
    nested = parent + "/agent-b0"
    other = "4d56ffff-0000-7000-8000-000000000000"
    ids = [parent, *agents, nested]
    links = {agents[0]: parent, agents[1]: parent, nested: agents[0]}
    assert resolve_id("4d56", ids, links) == parent
    assert short_ids(ids, links) == {
        parent: "4d56a0b1",
        agents[0]: "4d56a0b1…/agent-a4d56",
        agents[1]: "4d56a0b1…/agent-a4d57",
        nested: "4d56a0b1…/agent-b0",  # a short agent name shows whole
    }
    assert resolve_id("4d56a0b1…/agent-a4d57", ids, links) == agents[1]
    # Without the lineage the prefix stays ambiguous; with an unrelated id sharing it, too.
    with pytest.raises(AmbiguousId):
        resolve_id("4d56", ids)
    with pytest.raises(AmbiguousId) as exc:
        resolve_id("4d56", [*ids, other], links)
    assert len(exc.value.candidates) == 5
