"""``dsh-query hub`` (hub.md): run the hub in the foreground, or ``status``, ``stop``, ``list``
this user's hubs; ``ensure`` (start if needed, print where it listens) and ``connect`` (a stdio
bridge to the hub's socket) are **[ours]**, for editors that start the hub through the command
line or cannot open a Unix socket themselves (Neovim before 0.10).

A hub's configuration comes from ``--config FILE``, then the flags, then
``$DSH_QUERY_HUB_OPTIONS`` (a JSON object: the initializationOptions of the client that starts
the hub, which win over flags as they do with ``serve``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from ..resolve import CHECKPOINT_MODES
from .connect import persistence_option

ACTIONS = ("status", "stop", "list", "ensure", "connect")


def _stop(message: str) -> None:
    sys.stderr.write(f"dsh-query hub: {message}\n")
    sys.exit(2)


def _json_object(name: str, text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        _stop(f"{name} is not JSON: {exc}")
    if not isinstance(value, dict):
        _stop(f"{name} must hold a JSON object")
    return value


def _merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Key by key; the ``search`` and ``checkpoint`` groups by their keys (protocol.md §1)."""
    out = dict(base)
    for key, item in override.items():
        current = out.get(key)
        if key in ("search", "checkpoint") and isinstance(item, dict) and isinstance(current, dict):
            out[key] = {**current, **item}
        else:
            out[key] = item
    return out


def hub_options(args: argparse.Namespace) -> dict[str, Any]:
    """``--config``, overridden by the flags, overridden by ``$DSH_QUERY_HUB_OPTIONS``: a
    client's initializationOptions win over its flags, as with ``serve``."""
    from ..hub.start import OPTIONS_ENV

    options: dict[str, Any] = {}
    if args.config is not None:
        try:
            with open(args.config, encoding="utf-8") as f:
                options = _json_object(f"--config {args.config}", f.read())
        except OSError as exc:
            _stop(f"cannot read --config {args.config}: {exc.strerror}")
    flags: dict[str, Any] = {}
    if args.persistence:
        flags["persistence"] = persistence_option(args.persistence)
    if args.index is not None:
        flags["index"] = args.index
    if args.checkpoint is not None:
        flags["checkpoint"] = {"mode": args.checkpoint}
    options = _merge(options, flags)
    if os.environ.get(OPTIONS_ENV):
        options = _merge(options, _json_object(OPTIONS_ENV, os.environ[OPTIONS_ENV]))
    options.setdefault("persistence", "auto")
    return options


def _tcp(value: str | None) -> tuple[str, int] | None:
    if value is None:
        return None
    host, _, port = value.rpartition(":")
    if host not in ("127.0.0.1", "localhost", "::1", "[::1]") or not port.isdigit():
        _stop("--tcp only listens on a loopback address, as HOST:PORT")
    return host.strip("[]"), int(port)


def run_hub(args: argparse.Namespace) -> None:
    import contextlib
    import logging

    from ..mcp.bridge import run_tool
    from .serve import quiet_pygls

    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    quiet_pygls()
    from ..hub import daemon

    code = 2
    try:
        code = daemon.run(
            hub_options(args),
            idle_exit=args.idle_exit,
            tcp=_tcp(args.tcp),
            tcp_token_file=args.tcp_token_file,
            tools=run_tool,
        )
    except SystemExit as exc:  # a refused token file or directory, said on stderr
        code = exc.code if isinstance(exc.code, int) else 2
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
    # Worker threads may sit in a hung backend call: leave without waiting for them.
    os._exit(code)


def cmd_hub(args: argparse.Namespace) -> None:
    action = args.action
    if action is None:
        return run_hub(args)
    if action == "list":
        return show_list(args.json)
    from ..hub.start import HubStartError, reach
    from ..rundir import RunDirError

    options = hub_options(args)
    try:
        client = reach(options, start=action in ("ensure", "connect"))
    except (HubStartError, RunDirError) as exc:
        if action != "connect":
            raise
        return serve_instead(args, exc)
    if client is None:
        sys.stderr.write("no hub is running for this configuration\n")
        sys.exit(1)
    if action == "connect":  # the editor's own LSP session, through this process
        from ..hub.bridge import pump

        sys.exit(pump(client.sock))
    try:
        client.initialize(options)
        status = client.request("hub/status")
        if action == "stop":
            client.request("hub/stop")
            print(f"stopped the hub {status['key']} (pid {status['pid']})")
            return
    finally:
        client.close()
    if args.json or action == "ensure":
        print(json.dumps(status, indent=2))
        return
    _print_status(status)


def serve_instead(args: argparse.Namespace, reason: Exception) -> None:
    """``hub connect`` where no hub can be used (a bad option, a refused directory): this
    process becomes a private ``serve`` on the same stdio, so the editor's initialize is
    answered (a bad option with its SESSION_QUERY_INVALID_CONFIG) as without a hub."""
    sys.stderr.write(f"dsh-query hub connect: no hub ({reason}); serving privately\n")
    sys.stderr.flush()
    flags = [sys.executable, "-m", "dsh_query_server"]
    for value in args.persistence or []:
        flags += ["--persistence", value]
    if args.index is not None:
        flags += ["--index", args.index]
    if args.checkpoint is not None:
        flags += ["--checkpoint", args.checkpoint]
    os.execv(sys.executable, flags)


def _print_status(status: dict[str, Any]) -> None:
    persistence = status["config"]["persistence"]
    shown = " + ".join(persistence) if isinstance(persistence, list) else str(persistence)
    lines = [
        f"hub {status['key']}  pid {status['pid']}  up {status['uptimeMs'] / 1000:.0f} s",
        f"socket       {status['socket']}",
        f"connections  {status['connections']}",
        f"persistence  {shown}",
        f"index        {status['index']['file'] or status['index']['path']}",
    ]
    if "tcp" in status:
        tcp = status["tcp"]
        lines.append(f"tcp          {tcp['host']}:{tcp['port']} (token in {tcp['tokenFile']})")
    print("\n".join(lines))


def show_list(as_json: bool) -> None:
    """Every hub of this user whose lock is held (a live one); stale files are skipped."""
    from ..hub.paths import all_infos
    from ..hub.start import lock_is_free

    live = [
        info
        for info in all_infos()
        if isinstance(info.get("socket"), str)
        and not lock_is_free(str(info["socket"]).removesuffix(".sock") + ".lock")
    ]
    if as_json:
        print(json.dumps(live, indent=2))
        return
    if not live:
        print("no hub is running")
        return
    for info in live:
        persistence = info.get("config", {}).get("persistence")
        shown = " + ".join(persistence) if isinstance(persistence, list) else str(persistence)
        print(f"{info['key']}  pid {info['pid']}  {info['socket']}  {shown}")


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    hub = sub.add_parser(
        "hub",
        parents=[common],
        help="the one server your CLI, editors and agents share: run it, or status|stop|list",
        description="Without an action, run the hub of this configuration in the foreground.",
    )
    hub.add_argument(
        "action",
        nargs="?",
        choices=ACTIONS,
        help="status, stop or list the hubs; ensure (start if needed, print its status as JSON) "
        "and connect (stdio joined to the hub) are for editors; none: run the hub here",
    )
    hub.add_argument("--index", metavar="PATH", help="full-text index path, or :memory:")
    hub.add_argument(
        "--checkpoint", choices=CHECKPOINT_MODES, help="how live events reach persistence"
    )
    hub.add_argument("--config", metavar="FILE", help="configuration keys as a JSON object")
    hub.add_argument(
        "--idle-exit",
        type=float,
        default=600.0,
        metavar="SECONDS",
        help="exit after this long with no connection (default 600; 0: never)",
    )
    hub.add_argument("--tcp", metavar="HOST:PORT", help="also listen on a loopback TCP port")
    hub.add_argument("--tcp-token-file", metavar="FILE", help="the token TCP clients must present")
    hub.set_defaults(func=cmd_hub)
