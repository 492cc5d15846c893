"""The ``dsh-query`` command line (placeholder until the full CLI lands)."""

from __future__ import annotations

import argparse
import logging
import sys


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="dsh-query")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve")
    serve.add_argument("--persistence")
    serve.add_argument("--tcp")
    args = parser.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    logging.getLogger("pygls.protocol.json_rpc").setLevel(logging.CRITICAL)  # coded errors are answers
    from .server.app import serve as run

    options = {}
    if args.persistence is not None:
        options["persistence"] = None if args.persistence == "none" else args.persistence
    run(options)
