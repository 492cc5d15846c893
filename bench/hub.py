"""The hub lines (issue 23, hub.md §3): ``dsh-query`` commands against a warm hub on the SQLite
store, each a whole process run as a user types it (the ``dsh-query`` script beside this
Python), sampled in turn with ``python -c pass`` so that load on a shared machine hits them
alike; and a second client's first search after the hub built the index, against a warm search
(both over the hub's socket from here, so only the search is timed).

The hub lives in a private run, state and cache directory and is stopped at the end.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any

from .core import BenchBase
from .corpus import PROBE_SHORT
from .stats import Row, Stats, log, measure, measure_interleaved

TARGET_MS = 100.0
SECOND_CLIENT_FACTOR = 1.5


class HubSection(BenchBase):
    def hub_section(self) -> None:
        home = tempfile.mkdtemp(prefix="dq-bench-", dir="/tmp")  # a short socket path
        os.chmod(home, 0o700)
        env = {
            **self.env(),
            "HOME": home,
            "XDG_RUNTIME_DIR": home,
            "XDG_STATE_HOME": os.path.join(home, "state"),
            "XDG_CACHE_HOME": os.path.join(home, "cache"),
            "DSH_HOME": os.path.join(home, ".dsh"),
            "CLAUDE_CONFIG_DIR": os.path.join(home, ".claude"),
            "CODEX_HOME": os.path.join(home, ".codex"),
        }
        script = os.path.join(os.path.dirname(sys.executable), "dsh-query")
        cli = [script] if os.path.exists(script) else [sys.executable, "-m", "dsh_query_server.cli"]
        flags = ["--persistence", f"sqlite:{self.db}?readOnly=true"]
        phrase = self.plan["phrases"]["rare"]

        def run(*args: str) -> subprocess.CompletedProcess[bytes]:
            done = subprocess.run([*cli, *args, *flags], env=env, capture_output=True)
            if done.returncode != 0:
                raise RuntimeError(f"dsh-query {' '.join(args)}: {done.stderr.decode()[-500:]}")
            return done

        try:
            log("hub: the first command starts the hub")
            started = time.perf_counter()
            listed = json.loads(run("sessions", "--json").stdout)
            cold = (time.perf_counter() - started) * 1000
            started = time.perf_counter()
            run("search", phrase, "--json")
            build = (time.perf_counter() - started) * 1000
            log(
                f"hub: started and listed {len(listed):,} sessions in {cold:,.0f} ms; first search"
                f" (the index build) {build:,.0f} ms"
            )
            seq = self.short_len // 2
            commands: list[tuple[str, list[str]]] = [
                ("sessions --json", ["sessions", "--json"]),
                (f"search '{phrase}' --json", ["search", phrase, "--json"]),
                (
                    "read ±3 --json",
                    ["read", PROBE_SHORT, str(seq), "--before", "3", "--after", "3", "--json"],
                ),
            ]
            for _, args in commands:
                run(*args)  # warm the hub's caches for each
            timed = measure_interleaved(
                [lambda: subprocess.run([sys.executable, "-c", "pass"], env=env)]
                + [lambda a=args: run(*a) for _, args in commands],
                self.n(40),
                budget=120 * self.iters,
            )
            python, rest = timed[0], timed[1:]
            self.info["hub"] = {
                "coldStartMs": cold,
                "firstSearchMs": build,
                "pythonPass": python.to_json(),
            }
            for (name, _), stats in zip(commands, rest, strict=True):
                self.info["hub"][name] = stats.to_json()
                self.add(
                    Row(
                        f"dsh-query {name}, warm hub ({len(listed):,} sessions)",
                        stats,
                        baseline=python,
                        baseline_name="python -c pass",
                        target=f"<= {TARGET_MS:.0f} ms wall",
                        ok=stats.p50 <= TARGET_MS,
                        note=f"python -c pass p50 {python.p50:.1f} ms in the same run; the"
                        f" first command started the hub ({cold:,.0f} ms)",
                    )
                )
            self._second_client(env, flags, phrase)
        finally:
            subprocess.run([*cli, "hub", "stop", *flags], env=env, capture_output=True)
            shutil.rmtree(home, ignore_errors=True)

    def _second_client(self, env: dict[str, str], flags: list[str], phrase: str) -> None:
        """Each new connection's first search against one connection's warm searches."""
        saved = dict(os.environ)
        os.environ.update(env)
        try:
            from dsh_query_server.hub.start import connect

            options = {"persistence": flags[1]}
            warm_client = connect(options)
            assert warm_client is not None
            params: dict[str, Any] = {"query": phrase, "limit": 20}
            warm = measure(
                lambda i: warm_client.request("sessionQuery/searchSessions", params),
                self.n(40),
                warmup=3,
            )
            firsts = Stats()
            for _ in range(self.n(12)):
                client = connect(options)
                assert client is not None
                t = time.perf_counter()
                client.request("sessionQuery/searchSessions", params)
                firsts.samples.append((time.perf_counter() - t) * 1000)
                client.close()
            warm_client.close()
        finally:
            os.environ.clear()
            os.environ.update(saved)
        self.add(
            Row(
                "second client's first search after the hub built the index",
                firsts,
                baseline=warm,
                baseline_name="a warm search, same hub",
                ratio=firsts.p50 / warm.p50,
                target=f"no rebuild: <= {SECOND_CLIENT_FACTOR}x warm",
                ok=firsts.p50 <= SECOND_CLIENT_FACTOR * warm.p50,
                note=f"'{phrase}' (rare), each sample a new connection",
            )
        )
