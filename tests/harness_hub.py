"""The hub the tests start themselves: ``python -m tests.harness_hub [hub flags]``.

As tests/harness_server.py does for ``serve``, it registers the test backends (``test:<name>``,
tests/wire_backends.py) with the persistence mount's ``register_scheme``, then runs the normal
``dsh-query hub`` entry point. A hub a client starts (hub/start.py) is the production command and
knows no ``test:``: a test that mounts one starts its hub here first, and its clients find it.
"""

from __future__ import annotations

import sys

from dsh_query_server.cli import main
from dsh_query_server.persistence.mount.uri import register_scheme
from tests.harness_server import SCHEME, open_test_backend

if __name__ == "__main__":
    register_scheme(SCHEME, open_test_backend)
    main(["hub", *sys.argv[1:]])
