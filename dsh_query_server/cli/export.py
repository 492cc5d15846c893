"""``dsh-query export SESSION_ID [--descendants] [-o FILE] [--no-media] [--force]
[--workspace DIR]…`` (tools.md §2.5): start a server, call sessionQuery/exportSession, print
the path (or the result with --json, or the ZIP itself with ``-o -``). With ``--html``, one
self-contained HTML page of the session instead (views.md §4, html_export.py)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ..export.encode import segment

if TYPE_CHECKING:
    from ..client import StdioClient

T = TypeVar("T")


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
    p.add_argument(
        "--html",
        action="store_true",
        help="write the session view as one self-contained HTML page instead of a ZIP",
    )
    return p


def main(argv: list[str] | None = None) -> None:
    from .stores import refuse_wrong

    ns = parser().parse_args(argv)
    refuse_wrong(ns.persistence)
    if ns.html:
        html_main(ns)
        return
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


def _ask(ns: argparse.Namespace, ask: Callable[[StdioClient, str], T]) -> T:
    """``ask(client, session_id)`` on a server over the chosen persistence, the id resolved from
    its short form or prefix first (ids.py); a coded error or an ambiguous id exits 2."""
    from ..client import RpcError, StdioClient
    from .connect import persistence_flags
    from .ids import AmbiguousId
    from .progress_bar import attach, waiting
    from .render import listing

    bar = waiting(sys.stderr, "starting the server")  # an export runs past 0.5 s
    try:
        try:
            client = StdioClient(
                persistence_flags(ns.persistence),
                initialization_options={"search": {"openAt": "never"}},
            )
        except BaseException:
            if bar is not None:
                bar.stop()
            raise
        attach(client, bar)
        try:
            return ask(client, listing(client).resolve(ns.session_id))
        finally:
            client.close()
    except RpcError as exc:
        sys.stderr.write(f"error {exc.data_code or exc.code}: {exc.message}\n")
        sys.exit(2)
    except AmbiguousId as exc:
        sys.stderr.write(f"error: {exc}\n")
        sys.exit(2)


def _export(ns: argparse.Namespace, scratch: str | None) -> dict[str, Any]:
    """The server's exportSession result."""

    def ask(client: StdioClient, session_id: str) -> dict[str, Any]:
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

    return _ask(ns, ask)


def html_main(ns: argparse.Namespace) -> None:
    """``--html``: read the session from a server and write its page (0600, never replacing a
    file without ``--force``), or print it with ``-o -``."""
    from .html_export import page_data, render

    for flag, given in (("--descendants", ns.descendants), ("--no-media", ns.no_media),
                        ("--workspace", ns.workspace), ("--json", ns.json)):  # fmt: skip
        if given:
            sys.stderr.write(f"error: {flag} does not apply to --html\n")
            sys.exit(2)
    session_id, page = _ask(ns, lambda client, sid: (sid, render(page_data(client, sid))))
    if ns.output == "-":
        sys.stdout.write(page)
        sys.stdout.flush()
        return
    output = os.path.abspath(ns.output or f"dsh-session-{segment(session_id)}.html")
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if ns.force else os.O_EXCL)
    try:
        fd = os.open(output, flags, 0o600)
    except FileExistsError:
        sys.stderr.write(f"error: {output} exists (--force replaces it)\n")
        sys.exit(2)
    except OSError as exc:
        sys.stderr.write(f"error: cannot write {output}: {exc.strerror}\n")
        sys.exit(2)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(page)
    sys.stdout.write(output + "\n")
