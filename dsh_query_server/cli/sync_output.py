"""What ``dsh-query sync`` accepts and prints (postgres.md §6): its command line, the summary
line per source on stderr, and the one JSON object of ``--json`` on stdout."""

from __future__ import annotations

import argparse
from typing import TextIO

from .. import jsoncodec
from ..sync.group import Report, Skip


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dsh-query sync",
        description=("Copy sessions incrementally into a writable postgres store."),
    )
    parser.add_argument("sources", nargs="*", metavar="SOURCE", help="source URIs")
    parser.add_argument(
        "--from",
        dest="from_",
        action="append",
        default=[],
        metavar="URI",
        help="a source URI (may repeat; same as a positional SOURCE)",
    )
    parser.add_argument("--to", required=True, metavar="URI", help="the postgres:// target")
    parser.add_argument(
        "--session",
        action="append",
        default=[],
        metavar="ID",
        help="only this session (may repeat)",
    )
    parser.add_argument("--dry-run", action="store_true", help="write nothing")
    parser.add_argument(
        "--jobs",
        type=int,
        default=4,
        metavar="N",
        help="sessions synced at once (default 4, at most the target's poolSize); 1 commits"
        " them strictly in createdAt order",
    )
    parser.add_argument("--json", action="store_true", help="one JSON report on stdout")
    parser.add_argument(
        "--watch",
        type=int,
        metavar="SECONDS",
        help="repeat every SECONDS (>= 1) until SIGINT or SIGTERM",
    )
    return parser


def write_report(
    reports: list[Report], skipped: list[Skip], failed: list[Skip], out: TextIO | None, err: TextIO
) -> None:
    """The summary per source on ``err``; with ``out`` (``--json``), the JSON report there."""
    for report in reports:
        counts = ", ".join(f"{k} {v}" for k, v in report.counts.items())
        print(f"sync: {report.source}: {counts}", file=err)
    if out is not None:
        out.write(
            jsoncodec.dumps(
                {
                    "sources": [{"source": r.source, **r.counts} for r in reports],
                    "skipped": [
                        {
                            "id": s.id,
                            "source": s.source,
                            "reason": s.reason,
                            **({} if s.seq is None else {"seq": s.seq}),
                        }
                        for s in skipped
                    ],
                    "failed": [
                        {"id": s.id, "source": s.source, "message": s.message} for s in failed
                    ],
                }
            ).decode()
            + "\n"
        )
