"""The Gemini, Qwen and Copilot importers honour ``payloads`` as Claude's and Codex's do
(issue 28): a bulk read outlines their log-only events of other types, and everything else is
exactly ``inspect``'s answer, on every fixture home."""

from __future__ import annotations

import pathlib
import shutil

import pytest
from hypothesis import HealthCheck, given, settings

from dsh_query_server.cancel import NULL_TOKEN
from dsh_query_server.model.text import TEXT_TYPES
from dsh_query_server.persistence.contract.results import (
    EventOutline,
    Inspection,
    Payloads,
    Reading,
)
from dsh_query_server.persistence.importing.backend import ImportBackend
from dsh_query_server.persistence.mount.uri import open_backend
from tests.import_helpers import FIXTURES, SPEC
from tests.persistence.importing.test_import_bulk import TYPES, assert_same, inspected, readings


def homes(root: pathlib.Path) -> list[ImportBackend]:
    gemini = pathlib.Path(
        shutil.copytree(FIXTURES / "gemini" / "spec" / ".gemini", root / "gemini")
    )
    chats = gemini / "tmp" / "w" / "chats"
    for k, f in enumerate(sorted((FIXTURES / "gemini" / "rules").iterdir())):
        ext = ".json" if f.name.endswith(".json") else ".jsonl"
        shutil.copy(f, chats / f"session-2026-01-02T00-{k:02d}-{f.stem[:8]}{ext}")
    uris = [f"gemini:{gemini}", f"qwen:{shutil.copytree(SPEC / 'qwen', root / 'qwen')}"]
    for home in sorted((FIXTURES / "copilot").iterdir()):
        uris.append(f"copilot:{shutil.copytree(home, root / 'copilot' / home.name)}")
    backends: list[ImportBackend] = []
    for uri in uris:
        backend = open_backend(uri)
        assert isinstance(backend, ImportBackend)
        backends.append(backend)
    return backends


@pytest.fixture(scope="module")
def backends(tmp_path_factory: pytest.TempPathFactory) -> list[ImportBackend]:
    return homes(tmp_path_factory.mktemp("homes"))


def test_the_index_payloads_outline_log_only_events(backends: list[ImportBackend]) -> None:
    outlined = 0
    for backend in backends:
        for header in backend.list():
            sid = str(header.id)
            got = backend._bulk_one(sid, NULL_TOKEN, Reading(texts=TEXT_TYPES))  # pyright: ignore[reportPrivateUsage]
            assert_same(got, inspected(backend, sid), Reading(texts=TEXT_TYPES))
            if isinstance(got, Inspection):
                outlined += sum(isinstance(e, EventOutline) for e in got.events)
    assert outlined > 50  # honoured, not merely allowed


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(payloads=readings(TYPES))
def test_any_payloads_answer_as_inspect(backends: list[ImportBackend], payloads: Payloads) -> None:
    for backend in backends:
        for header in backend.list():
            sid = str(header.id)
            got = backend._bulk_one(sid, NULL_TOKEN, payloads)  # pyright: ignore[reportPrivateUsage]
            assert_same(got, inspected(backend, sid), payloads)
