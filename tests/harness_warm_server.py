"""``serve`` with the index warm-up over a test backend (tests/wire_backends.py): the backend
named by ``$DSH_TEST_WARM_MOUNT`` is mounted once the runtime is up and the warm-up is started on
it, as ``Runtime.start`` does for a configured backend (a ``test:`` URI is no configuration
value, so it cannot be configured)."""

from __future__ import annotations

import os

from dsh_query_server.core.runtime import Runtime
from dsh_query_server.persistence.mount.uri import register_scheme
from dsh_query_server.server.app import serve
from tests.harness_server import SCHEME, open_test_backend


def _mount_and_warm_up(runtime: Runtime) -> None:
    runtime.mount(os.environ["DSH_TEST_WARM_MOUNT"])
    runtime.warm_up()


if __name__ == "__main__":
    register_scheme(SCHEME, open_test_backend)
    serve({"persistence": None}, preload=_mount_and_warm_up)  # as --persistence none
