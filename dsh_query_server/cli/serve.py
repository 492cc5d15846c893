"""``dsh-query serve``: the JSON-RPC server itself, over stdio or a loopback TCP port."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..resolve import CHECKPOINT_MODES


def serve_options(args: argparse.Namespace) -> dict[str, Any]:
    """The flags as configuration options (overridden key by key by initializationOptions)."""
    from .connect import persistence_option

    options: dict[str, Any] = {}
    if args.persistence:
        options["persistence"] = persistence_option(args.persistence)
    if args.index is not None:
        options["index"] = args.index
    if args.checkpoint is not None:
        options["checkpoint"] = {"mode": args.checkpoint}
    if args.prices is not None:
        import os

        options["prices"] = os.path.abspath(args.prices)
    return options


def quiet_pygls() -> None:
    """pygls logs every coded error it answers; they are answers, not server errors."""
    import logging

    logging.getLogger("pygls.protocol.json_rpc").setLevel(logging.CRITICAL)


def cmd_serve(args: argparse.Namespace) -> None:
    import logging

    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    quiet_pygls()
    from ..server.app import serve

    options = serve_options(args)
    preload = None
    if args.demo:
        from .demo import serve_demo

        preload = serve_demo(options)
    tcp = None
    if args.tcp:
        host, _, port = args.tcp.rpartition(":")
        if host not in ("127.0.0.1", "localhost", "::1", "[::1]"):
            sys.exit("dsh-query serve --tcp only listens on a loopback address")
        tcp = (host.strip("[]"), int(port))
    serve(options, tcp=tcp, preload=preload, tcp_token_file=args.tcp_token_file)


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    serve = sub.add_parser(
        "serve", parents=[common], help="run the JSON-RPC server over stdio (or --tcp)"
    )
    serve.add_argument(
        "--tcp", metavar="HOST:PORT", help="listen on a loopback TCP port instead of stdio"
    )
    serve.add_argument(
        "--tcp-token-file",
        metavar="FILE",
        help="the token TCP clients must present (a 0600 file of yours); default: a new random "
        "one, its file named on stderr",
    )
    serve.add_argument("--index", metavar="PATH", help="full-text index path, or :memory:")
    serve.add_argument(
        "--checkpoint", choices=CHECKPOINT_MODES, help="how live events reach persistence"
    )
    serve.add_argument(
        "--prices", metavar="FILE", help="a prices file whose rates override genai-prices'"
    )
    serve.add_argument(
        "--demo",
        action="store_true",
        help="preload the demo corpus (live sessions in memory, persisted ones in a "
        "temporary store)",
    )
    serve.set_defaults(func=cmd_serve)
