"""``dsh-query export SESSION_ID [--descendants] [-o FILE] [--no-media] [--force]
[--workspace DIR]…`` (tools.md §2.5): start a server, call sessionQuery/exportSession, print
the path (or the result with --json, or the ZIP itself with ``-o -``)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from typing import Any

from ..export.encode import segment


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="dsh-query export", description="Export a session (and its sub-agents) as a ZIP."
    )
    p.add_argument("session_id", help="a session id, its short form as listed, or a unique prefix")
    p.add_argument(
        "--persistence",
        metavar="URI",
        action="append",
        help="backend to read from, as for the other commands (default: auto); repeatable",
    )
    p.add_argument("--descendants", action="store_true", help="include sub-agent sessions")
    p.add_argument("-o", "--output", metavar="FILE", help="the ZIP to write, or - for stdout")
    p.add_argument("--no-media", action="store_true", help="leave referenced images out")
    p.add_argument("--force", action="store_true", help="overwrite an existing file")
    p.add_argument(
        "--workspace",
        metavar="DIR",
        action="append",
        help="export only sessions under these directories",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    return p


def main(argv: list[str] | None = None) -> None:
    from .stores import refuse_wrong

    ns = parser().parse_args(argv)
    refuse_wrong(ns.persistence)
    stream = ns.output == "-"
    scratch = tempfile.mkdtemp(prefix="dsh-export-") if stream else None  # mode 0700
    try:
        result = _export(ns, scratch)
        if stream:
            with open(result["path"], "rb") as f:
                shutil.copyfileobj(f, sys.stdout.buffer)
            sys.stdout.buffer.flush()
        elif ns.json:
            sys.stdout.write(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
        else:
            sys.stdout.write(result["path"] + "\n")
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


def _export(ns: argparse.Namespace, scratch: str | None) -> dict[str, Any]:
    """The server's exportSession result; a coded error or an ambiguous id exits 2."""
    from ..client import RpcError, StdioClient
    from .connect import persistence_flags
    from .ids import AmbiguousId
    from .render import listing

    try:
        client = StdioClient(
            persistence_flags(ns.persistence),
            initialization_options={"search": {"openAt": "never"}},
        )
        try:
            # Every command takes an id's short form or prefix (ids.py).
            session_id = listing(client).resolve(ns.session_id)
            if scratch is not None:
                output = os.path.join(scratch, "export.zip")
            else:
                output = os.path.abspath(ns.output or f"dsh-session-{segment(session_id)}.zip")
            params: dict[str, Any] = {
                "sessionId": session_id,
                "outputPath": output,
                "includeDescendants": ns.descendants,
                "includeMedia": not ns.no_media,
                "overwrite": ns.force,
            }
            if ns.workspace:
                params["workspaceRoots"] = [os.path.abspath(w) for w in ns.workspace]
            return client.request("sessionQuery/exportSession", params)
        finally:
            client.close()
    except RpcError as exc:
        sys.stderr.write(f"error {exc.data_code or exc.code}: {exc.message}\n")
        sys.exit(2)
    except AmbiguousId as exc:
        sys.stderr.write(f"error: {exc}\n")
        sys.exit(2)
