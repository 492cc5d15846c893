"""Issue 25's "done when" for finding 1: a damaged log in a real-sized home (156 dsh logs made
from the real transcripts, plus one garbled copy and one with a damaged header; tests/real_home.py)
leaves search, listing and MCP working, with the damaged files named."""

from __future__ import annotations

import pathlib

import pytest

from tests.cli.cli_helpers import dsh, fits
from tests.mcp_helpers import mcp_session, text_of
from tests.real_home import GARBLED, HEADLESS, RealHome, real_dsh_home

pytestmark = [pytest.mark.wire, pytest.mark.slow]


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> RealHome:
    return real_dsh_home(tmp_path_factory.mktemp("real-home"))


def warned(stderr: str) -> dict[str, str]:
    """The warning lines by the session they name."""
    lines = [line for line in stderr.splitlines() if line.startswith("warning: ")]
    return {line.split()[3].rstrip(","): line for line in lines}


@pytest.mark.parametrize("columns", [80, 200])
def test_search_and_listing_work_and_name_the_damaged_files(home, tmp_path, columns):
    store = ("--persistence", home.uri, "--no-hub")
    found = dsh("search", "spotter", "--limit", "5", *store, home=tmp_path, columns=columns)
    assert found.returncode == 0, found.stderr
    assert "5 matching sessions on page 1" in found.stdout and fits(found.stdout, columns)
    named = warned(found.stderr)
    assert set(named) == {GARBLED, HEADLESS}
    assert str(home.garbled) in named[GARBLED] and "unparsable committed event" in named[GARBLED]
    assert str(home.headless) in named[HEADLESS]

    listed = dsh("sessions", *store, home=tmp_path, columns=columns)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.startswith(f"{home.sessions + 1} sessions")  # the garbled one is listed
    assert set(warned(listed.stderr)) == {HEADLESS}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_mcp_search_works_and_names_the_garbled_session(home, tmp_path: pathlib.Path):
    args = ["--persistence", home.uri, "--index", ":memory:", "--workspace", home.garbled_cwd]
    async with mcp_session(tmp_path, args) as session:
        result = await session.call_tool("session_search", {"query": "spotter"})
    assert not result.is_error
    text = text_of(result)
    assert text.startswith("Session search results (")
    assert text.endswith(f"was left out: {GARBLED}.")
    assert str(home.garbled) not in text
