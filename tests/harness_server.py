"""The server the tests start: ``python -m tests.harness_server [serve flags]``.

It registers the test backends (``test:<name>``, tests/wire_backends.py) with the persistence
mount's ``register_scheme`` (the test harness hook of persistence.md §1), then runs the normal
server entry point, as ``python -m dsh_query_server`` does.
"""

from __future__ import annotations

import sys

from dsh_query_server.cli import main
from dsh_query_server.persistence.contract.backend import PersistenceBackend
from dsh_query_server.persistence.mount.uri import register_scheme
from tests.wire_backends import make

SCHEME = "test"


def open_test_backend(uri: str) -> PersistenceBackend:
    backend = make(uri[len(SCHEME) + 1 :])
    setattr(backend, "uri", uri)  # noqa: B010 - the doubles keep their mount URI as a plain field
    return backend


if __name__ == "__main__":
    register_scheme(SCHEME, open_test_backend)
    main(["serve", *sys.argv[1:]])
