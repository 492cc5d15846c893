"""dsh-query against agentsview (issue 14, "Speed and memory") on the same generated Claude Code
and Codex homes (``bench/importers.py``'s generator): agentsview's offline ``sync`` against our
first search (the index build), and its search through its running daemon (HTTP on loopback)
against our ``searchSessions`` over stdio, same phrases, interleaved, p50 of ``--runs`` each.
Then our importer lines (listing, ``readEvent``, RSS) from ``bench.importers``.

    python -m bench.agentsview --sessions 100

agentsview (PyPI ``agentsview``, a Go binary) is installed for the bench only (``make
bench-deps``). When it cannot be found or run, its column says why and no number is invented.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench.importers import claude_home, codex_home, measure_homes, rss_kib, server_cpu
from dsh_query_server.client import StdioClient
from dsh_query_server.persistence.claude.backend import ClaudeBackend
from dsh_query_server.persistence.codex.backend import CodexBackend

PINNED = "0.46.1"
LIMIT = 50  # one page of hits for both tools


@dataclass
class Corpus:
    claude: Path
    codex: Path
    events: int
    sessions: int
    bytes: int
    phrases: dict[str, str] = field(default_factory=dict[str, str])
    files_with: dict[str, int] = field(default_factory=dict[str, int])


def find_agentsview(given: str | None) -> tuple[str | None, str]:
    """The binary given, else the one beside this interpreter (the bench venv) or on PATH, and
    its version line; or None and why not."""
    here = Path(sys.executable).parent / "agentsview"
    path = given or (str(here) if here.exists() else shutil.which("agentsview"))
    if path is None:
        return None, "agentsview is not installed (make bench-deps installs agentsview==0.46.1)"
    try:
        out = subprocess.run([path, "version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"agentsview does not run here: {e}"
    line = (out.stdout or out.stderr).strip().splitlines()
    if out.returncode != 0 or not line:
        return None, f"agentsview version failed (exit {out.returncode}): {out.stderr.strip()}"
    return path, line[0]


def transcripts(*roots: Path) -> list[Path]:
    return sorted(p for r in roots for p in r.rglob("*.jsonl") if p.name != "session_index.jsonl")


def _texts(rollout: Path, kind: str) -> list[str]:
    """Texts of one kind in a generated Codex rollout: ``output_text`` (assistant prose) or
    ``function_call_output`` (tool output)."""
    out: list[str] = []
    for line in rollout.read_bytes().splitlines():
        payload = json.loads(line).get("payload", {})
        if kind == "function_call_output" and payload.get("type") == kind:
            out.append(str(payload["output"]))
        elif payload.get("role") == "assistant":
            out.extend(str(c["text"]) for c in payload["content"] if c.get("type") == kind)
    return [t for t in out if len(t.split()) >= 12]


def pick_phrases(corpus: Corpus) -> None:
    """Phrases taken from the generated text of a mid-sized rollout: a 7-word run of assistant
    prose (rare), a 3-word run of it (medium), a word of the vocabulary (common) and a 7-word
    run of a tool output (rare-tool: does the tool index tool output?); then how many
    transcripts hold each (a byte scan, for scale)."""
    rollouts = sorted(corpus.codex.rglob("rollout-*.jsonl"), key=lambda p: p.stat().st_size)
    sample = rollouts[len(rollouts) // 2]
    prose = (_texts(sample, "output_text") or ["needle " * 12])[0].split()
    tool = (_texts(sample, "function_call_output") or ["needle " * 12])[0].split()
    corpus.phrases = {
        "rare": " ".join(prose[2:9]),
        "medium": " ".join(prose[3:6]),
        "common": "needle",
        "rare-tool": " ".join(tool[2:9]),
    }
    count_phrases(corpus)


def realhome_phrases(corpus: Corpus, projects: dict[str, int]) -> None:
    """Phrases of the real-content home: a project path of few copies (rare), one of a middling
    number (medium), a word of the tool-heavy fixture's output (common), and a sentence of a
    sub-agent's tool result (rare-tool in name only: every copy holds it)."""
    by_count = sorted(projects, key=lambda p: (projects[p], p))
    corpus.phrases = {
        "rare": f"projects/{by_count[0]}",
        "medium": f"projects/{by_count[len(by_count) // 2]}",
        "common": "dialyzer",
        "rare-tool": "for resuming to continue this agent's work",
    }
    count_phrases(corpus)


def count_phrases(corpus: Corpus) -> None:
    """How many transcripts hold each phrase (a byte scan, for scale)."""
    keys = {k: v.encode() for k, v in corpus.phrases.items()}
    counts = dict.fromkeys(keys, 0)
    for path in transcripts(corpus.claude, corpus.codex):
        data = path.read_bytes()
        for k, v in keys.items():
            counts[k] += v in data
    corpus.files_with = counts


def count_events(claude: Path, codex: Path) -> tuple[int, int]:
    """Imported events and sessions of both homes, read in process (the denominator of every
    events/s line, the same for both tools)."""
    events = sessions = 0
    for backend in (
        ClaudeBackend(str(claude), f"claude:{claude}"),
        CodexBackend(str(codex), f"codex:{codex}"),
    ):
        for h in backend.list():
            events += len(backend.inspect(str(h.id)).events)
            sessions += 1
    return events, sessions


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Agentsview:
    """agentsview with its data dir, HOME and agent dirs inside ``tmp`` (never a real home)."""

    def __init__(self, binary: str, tmp: Path, corpus: Corpus) -> None:
        self.binary = binary
        home = tmp / "av-home"
        data = tmp / "av-data"
        home.mkdir(mode=0o700)
        data.mkdir(mode=0o700)
        self.env = dict(
            os.environ,
            HOME=str(home),
            XDG_CONFIG_HOME=str(home),
            XDG_DATA_HOME=str(home),
            XDG_CACHE_HOME=str(home),
            XDG_STATE_HOME=str(home),
            AGENTSVIEW_DATA_DIR=str(data),
            CLAUDE_PROJECTS_DIR=str(corpus.claude / "projects"),
            CLAUDE_CONFIG_DIR=str(corpus.claude),
            CODEX_SESSIONS_DIR=str(corpus.codex / "sessions"),
            CODEX_HOME=str(corpus.codex),
            AGENTSVIEW_TELEMETRY_ENABLED="0",
            AGENTSVIEW_DISABLE_UPDATE_CHECK="1",
            AGENTSVIEW_NO_BROWSER="1",
        )
        self.server: subprocess.Popen[str] | None = None
        self.conn: http.client.HTTPConnection | None = None

    def sync(self) -> tuple[float, float, str]:
        """One offline sync into the empty data dir: wall s, CPU s, its summary lines."""
        env = dict(self.env, AGENTSVIEW_NO_DAEMON="1")
        t, c = time.perf_counter(), children_cpu()
        out = subprocess.run(
            [self.binary, "sync"], env=env, capture_output=True, text=True, timeout=3600
        )
        wall, used = time.perf_counter() - t, children_cpu() - c
        if out.returncode != 0:
            raise RuntimeError(f"agentsview sync exit {out.returncode}: {out.stderr[-500:]}")
        summary = [
            x.strip()
            for x in out.stdout.splitlines()
            if x.startswith(("Sync complete", "Database:"))
        ]
        return wall, used, "; ".join(summary)

    def serve(self) -> None:
        """Its daemon on a free loopback port, without its own sync (the data is synced)."""
        port = free_port()
        self.server = subprocess.Popen(
            [
                self.binary,
                "serve",
                "--no-sync",
                "--no-browser",
                "--no-update-check",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
            ],
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        assert self.server.stdout is not None
        deadline = time.monotonic() + 120
        for line in self.server.stdout:
            if "listening at" in line:
                break
            if time.monotonic() > deadline:
                raise RuntimeError("agentsview serve did not start in 120 s")
        else:
            raise RuntimeError(f"agentsview serve exited ({self.server.wait()})")
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

    def search(self, phrase: str) -> int:
        """One search, the phrase quoted (FTS phrase syntax, as ours always is): hits returned."""
        assert self.conn is not None
        q = urllib.parse.urlencode({"q": f'"{phrase}"', "limit": LIMIT})
        self.conn.request("GET", f"/api/v1/search?{q}")
        response = self.conn.getresponse()
        body = response.read()
        if response.status != 200:
            raise RuntimeError(f"agentsview search HTTP {response.status}: {body[:200]!r}")
        return len(json.loads(body)["results"])

    def rss(self) -> tuple[int, int]:
        return rss_kib(self.server.pid) if self.server is not None else (0, 0)

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
        if self.server is not None:
            self.server.terminate()
            try:
                self.server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.server.kill()
                self.server.wait()


def interleaved(
    ours: Callable[[], object],
    theirs: Callable[[], object] | None,
    runs: int,
    pids: tuple[int, int | None],
) -> tuple[float, float | None, float, float | None]:
    """p50 wall ms of each, sampled in turn so load on the machine falls on both alike, and the
    mean server CPU ms per request (``/proc`` ticks: coarse, but blind to the queue)."""
    a: list[float] = []
    b: list[float] = []
    ca = cb = 0.0
    for _ in range(runs):
        c, t = server_cpu(pids[0]), time.perf_counter()
        ours()
        a.append(time.perf_counter() - t)
        ca += server_cpu(pids[0]) - c
        if theirs is not None and pids[1] is not None:
            c, t = server_cpu(pids[1]), time.perf_counter()
            theirs()
            b.append(time.perf_counter() - t)
            cb += server_cpu(pids[1]) - c
    return (
        statistics.median(a) * 1000,
        statistics.median(b) * 1000 if b else None,
        ca / runs * 1000,
        cb / runs * 1000 if b else None,
    )


def row(name: str, ours: float, theirs: float | None, unit: str, lower_is_better: bool) -> str:
    if theirs is None:
        return f"{name:<34} {ours:>12,.2f} {'–':>12} {'–':>8}  agentsview not measured (above)"
    ratio = theirs / ours if lower_is_better else ours / theirs
    ahead = "ahead" if ratio > 1 else "BEHIND"
    return f"{name:<34} {ours:>12,.2f} {theirs:>12,.2f} {ratio:>7.2f}×  {ahead} ({unit})"


def compare(corpus: Corpus, tmp: Path, runs: int, given: str | None) -> None:
    binary, version = find_agentsview(given)
    print(f"agentsview: {version}" if binary else f"agentsview: NOT MEASURED — {version}")
    if binary and PINNED not in version:
        print(f"  (the bench pins {PINNED}; numbers are for the version above)")
    av = Agentsview(binary, tmp, corpus) if binary else None
    sync: tuple[float, float, str] | None = None
    if av is not None:
        try:
            sync = av.sync()
            print(f"agentsview sync: {sync[2]}")
            av.serve()
        except (OSError, RuntimeError, subprocess.TimeoutExpired) as e:
            why = f"agentsview failed here: {e}"
            print(f"agentsview: NOT MEASURED — {why}")
            av.close()
            av = None
    lines: list[str] = []
    verdict: dict[str, float] = {}
    index = tmp / "index.sqlite"
    env = dict(
        os.environ,
        HOME=str(tmp),
        XDG_STATE_HOME=str(tmp),
        XDG_CACHE_HOME=str(tmp),
        DSH_HOME=str(tmp / "dsh"),
        CLAUDE_CONFIG_DIR=str(corpus.claude),
        CODEX_HOME=str(corpus.codex),
    )
    options = {
        "persistence": [f"claude:{corpus.claude}", f"codex:{corpus.codex}"],
        "index": str(index),
    }
    try:
        with StdioClient([], env=env, initialization_options=options) as c:
            pid = c.process.pid
            c.request("sessionPersistence/status", {})
            t, c0 = time.perf_counter(), server_cpu(pid)
            c.request("sessionQuery/searchSessions", {"query": "needle", "limit": LIMIT})
            built, built_c = time.perf_counter() - t, server_cpu(pid) - c0
            mb = corpus.bytes / 1e6
            s_wall = sync[0] if sync else None
            s_cpu = sync[1] if sync else None
            lines.append(row("index build / sync, wall s", built, s_wall, "s", True))
            if s_wall is not None:
                verdict["index build (wall)"] = s_wall / built
            lines.append(
                row(
                    "  events/s (wall)",
                    corpus.events / built,
                    corpus.events / s_wall if s_wall else None,
                    "events/s",
                    False,
                )
            )
            lines.append(
                row(
                    "  MB/s of transcripts (wall)",
                    mb / built,
                    mb / s_wall if s_wall else None,
                    "MB/s",
                    False,
                )
            )
            lines.append(row("  CPU s (server / sync process)", built_c, s_cpu, "s", True))
            hits: dict[str, tuple[int, int | None]] = {}
            for level, phrase in corpus.phrases.items():

                def ours(p: str = phrase, k: str = level) -> None:
                    page = c.request("sessionQuery/searchSessions", {"query": p, "limit": LIMIT})
                    hits[k] = (len(page["items"]), hits.get(k, (0, None))[1])

                def theirs(p: str = phrase, k: str = level) -> None:
                    assert av is not None
                    hits[k] = (hits.get(k, (0, None))[0], av.search(p))

                av_pid = av.server.pid if av and av.server else None
                a, b, ca, cb = interleaved(ours, theirs if av else None, runs, (pid, av_pid))
                lines.append(row(f"search {level} p50 ms", a, b, "ms", True))
                if b is not None and level != "rare-tool":
                    verdict[f"search {level} (p50)"] = b / a
                lines.append(row("  server CPU ms per search", ca, cb, "ms", True))
            rss, hwm = rss_kib(pid)
            av_rss, av_hwm = av.rss() if av else (0, 0)
            lines.append(
                row(
                    "RSS MiB after the searches",
                    rss / 1024,
                    av_rss / 1024 if av else None,
                    "MiB",
                    True,
                )
            )
            lines.append(
                row(
                    "  peak RSS MiB (VmHWM)", hwm / 1024, av_hwm / 1024 if av else None, "MiB", True
                )
            )
    finally:
        if av is not None:
            av.close()
    print(f"\n{'':<34} {'dsh-query':>12} {'agentsview':>12} {'ratio':>8}")
    print("\n".join(lines))
    print(
        "\nphrases (transcripts holding it by byte scan; hits on the first page of "
        f"{LIMIT}: dsh-query / agentsview):"
    )
    for level, phrase in corpus.phrases.items():
        ours_n, theirs_n = hits.get(level, (0, None))
        print(
            f"  {level:<7} {phrase!r}: {corpus.files_with[level]} transcripts; "
            f"{ours_n} / {'–' if theirs_n is None else theirs_n}"
        )
    if verdict:
        met = all(r > 1 for r in verdict.values())
        print(
            f"target (ahead of agentsview on index build and search): {'MET' if met else 'MISS'}"
            f" — {', '.join(f'{k} {r:.2f}×' for k, r in verdict.items())} (>1 is ahead)"
        )
    else:
        print("target (ahead of agentsview on index build and search): agentsview not measured")
    print(
        "agentsview's sync counts its own messages (a tool call and its result may be one "
        "message); events/s divides the same imported event count for both."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sessions", type=int, default=100, help="per home (Claude, Codex)")
    parser.add_argument("--largest", type=int, default=2500, help="turns of the largest Claude log")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--agentsview", help="its binary (default: the venv's, then PATH)")
    parser.add_argument(
        "--realhome",
        type=int,
        metavar="MB",
        help="the real-content home of this size (bench/realhome.py, cached) instead of the"
        " generated homes",
    )
    parser.add_argument(
        "--skip-importer-lines",
        action="store_true",
        help="only the comparison, not bench.importers' listing/readEvent lines",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        claude, codex = tmp / "claude", tmp / "codex"
        t = time.perf_counter()
        if args.realhome:
            from bench.realhome import ensure_home  # the real-content home (issue 28)

            cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
            home = ensure_home(str(cache / "dsh-query-bench"), args.realhome, False)
            claude, codex = home.claude, home.codex
            files = int(home.plan["transcripts"])  # type: ignore[call-overload]
        else:
            _, files = claude_home(claude, args.sessions, largest=args.largest)
            codex_home(codex, args.sessions)
        size = sum(p.stat().st_size for p in transcripts(claude, codex))
        events, sessions = count_events(claude, codex)
        corpus = Corpus(claude, codex, events, sessions, size)
        if args.realhome:
            realhome_phrases(corpus, home.plan["projects"])  # type: ignore[arg-type]
        else:
            pick_phrases(corpus)
        made = "real-content home of" if args.realhome else "generated"
        rollouts = len(list(codex.rglob("rollout-*.jsonl")))
        print(
            f"{made} {files} transcripts, {rollouts} of them Codex rollouts "
            f"({size / 1e6:.1f} MB; {sessions} sessions, {events:,} events imported) in "
            f"{time.perf_counter() - t:.1f} s; {os.cpu_count()} cores, load "
            f"{os.getloadavg()[0]:.1f}"
        )
        compare(corpus, tmp, args.runs, args.agentsview)
        if not args.skip_importer_lines:
            measure_homes(claude, codex, args.runs)


if __name__ == "__main__":
    main()
