"""Time to first progress (issue 28, protocol.md §8): a person's first search over a large home
must show progress within half a second.

A Claude Code home of ``--sessions`` transcripts (bench/usage.py's generator, cached under
``~/.cache/dsh-query-bench/progress-claude-<n>``), a fresh server over stdio with a cold index
and no warm-up, and one ``searchSessions`` carrying a ``workDoneToken``: the time from writing the
request to reading the first ``$/progress`` (its ``begin``), with the server's default delay.
Also reported (no target): the first report with a percentage and the whole search. And what a
person at a terminal sees: ``dsh-query search --no-hub`` over the same home with its stderr on a
pseudo-terminal, from starting the command to the first frame of its bar (the interpreter's and
the server's start included; cli/progress_bar.py).

    python -m bench.progress_line [--sessions 1600] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import pty
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .stats import Row, Stats, log, render
from .usage import claude_usage_home
from .wire import WireClient, wait_until

TARGET_SECONDS = 0.5
CACHE = Path(os.environ.get("DSH_QUERY_BENCH_CACHE", Path.home() / ".cache" / "dsh-query-bench"))


def home(sessions: int) -> Path:
    root = CACHE / f"progress-claude-{sessions}"
    done = root / "done"
    if not done.exists():
        log(f"progress: writing a Claude Code home of {sessions:,} transcripts to {root}")
        claude_usage_home(root / "claude", sessions, seed=28)
        done.write_text("ok\n")
    return root / "claude"


def one_run(claude: Path) -> dict[str, float]:
    """Seconds from the request to its first begin, first percentage, and answer."""
    env = {k: v for k, v in os.environ.items() if k != "DSH_QUERY_PROGRESS_DELAY_MS"}
    with tempfile.TemporaryDirectory(prefix="dsh-query-bench-progress-") as tmp:
        options = {
            "persistence": f"claude:{claude}",
            "index": str(Path(tmp) / "index.sqlite"),
            "search": {"warmUp": False},
            "checkpoint": {"mode": "manual"},
        }
        env["HOME"] = tmp
        with WireClient(
            ["--persistence", "none"], env=env, initialization_options=options, timeout=1800
        ) as server:

            def first(kind: str, percentage: bool = False) -> Any:
                for message in server.notifications:
                    if message.get("method") != "$/progress":
                        continue
                    value = message["params"]["value"]
                    if value["kind"] == kind and (not percentage or "percentage" in value):
                        return value
                return None

            marks: dict[str, float] = {}
            started = time.perf_counter()
            _, future = server.submit(
                "sessionQuery/searchSessions", {"query": "next step", "workDoneToken": "bench"}
            )
            wait_until(lambda: first("begin") is not None or future.done(), 600, 0.001)
            marks["begin"] = time.perf_counter() - started
            wait_until(lambda: first("report", True) is not None or future.done(), 600, 0.001)
            marks["percentage"] = time.perf_counter() - started
            future.result(1800)
            marks["answer"] = time.perf_counter() - started
            if first("begin") is None:
                marks["begin"] = float("inf")  # answered without any progress
    return marks


def cli_first_frame(claude: Path) -> float:
    """Seconds from starting ``dsh-query search`` (stderr on a pseudo-terminal, a cold index) to
    the first frame of its progress bar; inf when none was drawn."""
    with tempfile.TemporaryDirectory(prefix="dsh-query-bench-progress-") as tmp:
        env = {k: v for k, v in os.environ.items() if k != "DSH_QUERY_PROGRESS_DELAY_MS"}
        env.update(HOME=tmp, XDG_CACHE_HOME=tmp, XDG_STATE_HOME=tmp, TERM="xterm-256color")
        env["COLUMNS"] = "80"
        main_fd, secondary = pty.openpty()
        command = [sys.executable, "-m", "dsh_query_server.cli", "search", "--no-hub"]
        command += ["--persistence", f"claude:{claude}", "next step"]
        started = time.perf_counter()
        process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=secondary, stdin=subprocess.DEVNULL, env=env
        )
        os.close(secondary)
        first = float("inf")
        while True:
            try:
                data = os.read(main_fd, 65536)
            except OSError:  # EIO: the command closed the terminal
                break
            if not data:
                break
            if first == float("inf") and "━".encode() in data:
                first = time.perf_counter() - started
        os.close(main_fd)
        process.wait(1800)
    return first


def progress_rows(sessions: int, runs: int) -> list[Row]:
    claude = home(sessions)
    frames = Stats([cli_first_frame(claude) * 1000 for _ in range(runs)])
    samples = [one_run(claude) for _ in range(runs)]
    begin = Stats([s["begin"] * 1000 for s in samples])
    percentage = Stats([s["percentage"] * 1000 for s in samples])
    answer = Stats([s["answer"] * 1000 for s in samples])
    return [
        Row(
            f"time to first progress, first search over {sessions:,} transcripts",
            begin,
            target=f"<= {TARGET_SECONDS * 1000:.0f} ms",
            ok=begin.p50 <= TARGET_SECONDS * 1000,
            note=f"{runs} cold builds; the server's default delay",
        ),
        Row("  first report with a percentage", percentage, note="reference only"),
        Row("  the whole first search (index build)", answer, note="reference only"),
        Row(
            "time to the first bar of `dsh-query search` on a terminal",
            frames,
            target=f"<= {TARGET_SECONDS * 1000:.0f} ms",
            ok=frames.p50 <= TARGET_SECONDS * 1000,
            note=f"{runs} cold builds, from starting the command (its server's start included)",
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=1600)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(render(progress_rows(args.sessions, args.runs)))


if __name__ == "__main__":
    main()
