"""The tree-view client the tree tests share: a server over stdio and walking helpers."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager

import pytest_lsp
from msgspec import UNSET
from pytest_lsp import LanguageClient

from dsh_query_server.cancel import CancelToken
from dsh_query_server.core.config import build_config
from dsh_query_server.core.runtime import Runtime
from dsh_query_server.server import tree
from dsh_query_server.server.tree.nodes import TreeNode, TreeResource

from .builders import TEST_ENV, TEST_SERVER, U
from .fakes import MemoryBackend
from .lsp_client import config, init_params


@pytest_lsp.fixture(
    config=config("--persistence", "none", env=TEST_ENV, server=TEST_SERVER), name="client"
)
async def client_fixture(lsp_client: LanguageClient):
    # Manual checkpoints: what is persisted is exactly what each test wrote.
    await lsp_client.initialize_session(
        init_params({"index": ":memory:", "checkpoint": {"mode": "manual"}})
    )
    yield
    await asyncio.wait_for(lsp_client.shutdown_session(), 10)


async def call(client, method, params=None):
    return await client.protocol.send_request_async(method, params if params is not None else {})


async def children(client, view, node_id=None, args=None):
    params = {"view": view}
    if node_id is not None:
        params["nodeId"] = node_id
    if args is not None:
        params["args"] = args
    result = await call(client, "sessionQuery/treeChildren", params)
    assert set(result) == {"nodes"}
    for node in result["nodes"]:
        assert node["collapsible"] in ("none", "collapsed", "expanded")
        assert isinstance(node["id"], str) and isinstance(node["label"], str)
    return result["nodes"]


async def parent_of(client, view, node_id):
    result = await call(client, "sessionQuery/treeParent", {"view": view, "nodeId": node_id})
    assert set(result) <= {"nodeId"}
    return result.get("nodeId")


async def walk(client, view, args=None, *, expand=lambda node: True):
    """Breadth-first over every collapsible node (filtered by ``expand``): {id: node}, plus the
    parent of each id. Checks id uniqueness, the 200-children bound and treeParent."""
    found, parents, queue = {}, {}, [None]
    while queue:
        parent = queue.pop(0)
        nodes = await children(client, view, parent, args)
        assert len(nodes) <= 200
        for node in nodes:
            assert node["id"] not in found, node
            found[node["id"]], parents[node["id"]] = node, parent
            assert await parent_of(client, view, node["id"]) == parent, node
            if node["collapsible"] != "none" and expand(node):
                queue.append(node["id"])
    return found, parents


# -- in process: the sessions view over an in-memory corpus ------------------------------------


@contextmanager
def runtime_over(headers: list[dict]) -> Iterator[tuple[Runtime, MemoryBackend]]:
    runtime = Runtime(
        build_config({"persistence": None, "index": ":memory:", "search": {"openAt": "never"}}),
        lambda ids, corpus: None,
    )
    backend = MemoryBackend()
    for h in headers:
        backend.put(h, [U(0, f"ask {h['id']}")])
    runtime.binding.mount(backend)
    try:
        yield runtime, backend
    finally:
        runtime.close()


def kids(runtime: Runtime, node_id: str | None, args: dict | None = None) -> list[TreeNode]:
    return tree.tree_children(
        runtime, "sessions", node_id, UNSET if args is None else args, CancelToken()
    )


def sid(node: TreeNode) -> str:
    assert isinstance(node.resource, TreeResource)
    return node.resource.sessionId


def parent(runtime: Runtime, node_id: str) -> str | None:
    return tree.tree_parent(runtime, "sessions", node_id, CancelToken())
