"""Fuzzing a hub's own methods over its socket (hub.md §2): ``hub/status``, ``hub/render`` and
``hub/callTool`` with hypothesis-generated params, on one long-lived hub run through the test
harness, checked as tests/server/test_fuzz.py checks a private server (every request answered on
its id, only the protocol's codes, no traceback or server path); afterwards the hub is alive and
answers, and its log holds no traceback.

``hub/stop`` is not fuzzed: its whole effect is to end the hub (tests/hub/test_hub.py tests it,
and that ``hub/render`` refuses to run it). ``hub/render`` renders methods of the server's table
with the params test_fuzz.py draws for each, so a mount never names a real location and an
export writes only below its directory.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from itertools import count
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh_query_server.hub.methods import METHODS as HUB_METHODS
from tests.builders import U
from tests.hub.hub_helpers import using_hubs
from tests.hub.hub_wire import HubProcess, Peer, hub_env
from tests.server.test_fuzz import (
    EXPORT_DIR,
    FIELDS,
    FUZZ,
    METHODS,
    check_response,
    json_values,
    keep_binding,
    requests,
)

pytestmark = [pytest.mark.wire, pytest.mark.slow]

FUZZED = ("hub/status", "hub/render", "hub/callTool")
OPTIONS = {"persistence": None, "index": ":memory:", "checkpoint": {"mode": "manual"}}
_ids = count(1)


def test_every_hub_method_but_stop_is_fuzzed() -> None:
    assert sorted(n for n in HUB_METHODS if n.startswith("hub/")) == sorted([*FUZZED, "hub/stop"])


@st.composite
def rendered(draw: Any) -> dict[str, Any]:
    """hub/render of a method of the server's table, its params drawn as test_fuzz draws them."""
    method, params = draw(requests().filter(lambda r: r[0] in HUB_METHODS and "/" in r[0]))
    if method.startswith("hub/") or draw(st.integers(0, 9)) == 0:
        return {"method": draw(FIELDS["method"]), "params": draw(json_values)}
    return {"method": method, "params": params}


@st.composite
def hub_requests(draw: Any) -> tuple[str, Any]:
    method = draw(st.sampled_from(FUZZED))
    if method == "hub/render":
        return method, draw(rendered())
    keys = METHODS[method]
    if draw(st.integers(0, 9)) == 0:
        return method, draw(json_values)
    return method, {k: draw(FIELDS[k]) for k in keys if draw(st.booleans())}


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Peer, HubProcess]]:
    os.makedirs(EXPORT_DIR, mode=0o700, exist_ok=True)
    env = hub_env(tmp_path_factory.mktemp("hub-fuzz"))
    # using_hubs: the hub outlives each test (conftest stops hubs after every test otherwise)
    with (
        using_hubs(env["XDG_RUNTIME_DIR"]),
        HubProcess(env, OPTIONS, "--idle-exit", "0") as process,
    ):
        peer = Peer(process.socket)
        peer.initialize(OPTIONS)
        header = {"id": "live", "createdAt": 5, "cwd": "/p"}
        peer.result(
            "c", "sessionStore/create", {"header": header, "seed": [U(0, "needle").to_value()]}
        )
        peer.result("m", "sessionPersistence/mount", {"uri": "test:seeded"})
        yield peer, process
        shutil.rmtree(EXPORT_DIR, ignore_errors=True)
        assert process.process.poll() is None, Path(process.log).read_text()[-3000:]
        assert peer.result("end", "hub/status")["connections"] == 1  # alive, and answering
        peer.close()
    log = Path(process.log).read_text(encoding="utf-8", errors="replace")
    assert "Traceback" not in log, log[-3000:]


class _Rebind:
    """test_fuzz.keep_binding's client: an unmount the fuzzing rendered is undone."""

    def __init__(self, peer: Peer) -> None:
        self.peer = peer

    def request(self, method: str, params: Any) -> Any:
        return self.peer.result(f"rebind-{next(_ids)}", method, params)


@FUZZ
@given(request=hub_requests())
def test_generated_params_for_the_hub_methods(hub: tuple[Peer, HubProcess], request: Any) -> None:
    peer, _ = hub
    method, params = request
    response = peer.call(f"f{next(_ids)}", method, params)
    check_response(response, method)
    if method == "hub/render" and isinstance(params, dict):
        keep_binding(_Rebind(peer), str(params.get("method")))  # type: ignore[arg-type]
