"""Issue 28's speed lines on the real-content home (``bench/realhome_corpus.py``): our first search
on a fresh index (``dsh-query search``, cold: the index is built), agentsview's ``sync`` of the
same home into an empty data dir, and the floor (read and decode every record with msgspec, in
this process), sampled in turn in the same run; the peak RSS of our process tree.

    python -m bench --only realhome [--realhome-sizes 300,1500] [--runs 3]

Targets: first search >= 2x faster than agentsview sync; <= 4x the floor; peak RSS <= 200 MB.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import msgspec

from .agentsview import PINNED, Agentsview, Corpus, find_agentsview
from .core import REPO
from .realhome_corpus import VERSION, build_home
from .stats import Row, log

PHRASE = "dialyzer"  # in the tool-heavy fixture's output: found in every copy


@dataclass(frozen=True)
class Home:
    root: Path
    plan: dict[str, object]

    @property
    def claude(self) -> Path:
        return self.root / "claude"

    @property
    def codex(self) -> Path:
        return self.root / "codex"

    def files(self) -> list[Path]:
        return sorted(p for p in self.root.rglob("*.jsonl"))


def ensure_home(cache: str, megabytes: int, rebuild: bool) -> Home:
    root = Path(cache) / f"realhome-{megabytes}mb-v{VERSION}"
    plan_path = root / "plan.json"
    if plan_path.exists() and not rebuild:
        return Home(root, json.loads(plan_path.read_text()))
    shutil.rmtree(root, ignore_errors=True)
    Path(cache).mkdir(parents=True, exist_ok=True)  # a fresh machine has no cache yet
    tmp = Path(tempfile.mkdtemp(prefix=root.name + ".", dir=cache))
    started = time.perf_counter()
    target = megabytes * 1_000_000

    shown = [0]

    def progress(done: int) -> None:
        if done - shown[0] >= 50_000_000:  # a line per 50 MB
            shown[0] = done
            sys.stderr.write(f"building {root.name}: {done / 1e6:,.0f} / {megabytes:,} MB\n")

    plan = build_home(tmp, target, seed=28, progress=progress)
    plan["buildSeconds"] = round(time.perf_counter() - started, 1)
    (tmp / "plan.json").write_text(json.dumps(plan, indent=1))
    tmp.rename(root)
    return Home(root, plan)


def warm(home: Home) -> None:
    """Every transcript read once, right before a measured command: each of the three starts
    from the same page cache. The machine's proactive reclaim (DAMON) evicts a home's pages
    between runs, and the run after another home's, or after agentsview's writes, read part of
    the 1.5 GB home from disk (17.97 s against 14.35 s in the same series)."""
    for path in home.files():
        path.read_bytes()


def floor(home: Home) -> tuple[float, int]:
    """Read every transcript and decode every record with msgspec: wall s, records."""
    decode = msgspec.json.Decoder().decode
    t = time.perf_counter()
    n = 0
    for path in home.files():
        for line in path.read_bytes().splitlines():
            if line:
                decode(line)
                n += 1
    return time.perf_counter() - t, n


class TreePeak:
    """Samples the descendants of a process (the CLI's server and its workers, not the CLI
    itself) every 50 ms; ``peak`` is the largest sum, over one sample's living processes, of
    each one's peak so far (VmHWM): an upper bound of the tree's peak (the processes need not
    peak together), which counts a worker only beside the processes alive with it."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak_kib = 0
        self.most = 0
        self._hwm: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _tree(self) -> list[int]:
        out, todo = [], [self.pid]
        while todo:
            pid = todo.pop()
            out.append(pid)
            try:
                for task in os.listdir(f"/proc/{pid}/task"):
                    with open(f"/proc/{pid}/task/{task}/children") as f:
                        todo.extend(int(x) for x in f.read().split())
            except OSError:
                pass
        return out

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            self.sample()

    def sample(self) -> None:
        pids = self._tree()[1:]
        alive = 0
        for pid in pids:
            try:
                with open(f"/proc/{pid}/status") as f:
                    for row in f:
                        if row.startswith("VmHWM:"):
                            self._hwm[pid] = max(self._hwm.get(pid, 0), int(row.split()[1]))
                            alive += self._hwm[pid]
            except OSError:
                pass
        self.most = max(self.most, len(pids))
        self.peak_kib = max(self.peak_kib, alive)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def compiled() -> None:
    """The package's bytecode, written once, as ``pip install`` writes it (see first_search)."""
    import compileall

    compileall.compile_dir(os.path.join(REPO, "dsh_query_server"), quiet=1, force=False)


def first_search(home: Home, tmp: Path) -> tuple[float, float, int, int]:
    """``dsh-query search`` on a fresh index: wall s, peak RSS MiB of the tree, hits, processes."""
    state = tmp / "ours"
    shutil.rmtree(state, ignore_errors=True)
    state.mkdir(mode=0o700)
    env = dict(
        os.environ,
        HOME=str(state),
        XDG_STATE_HOME=str(state / "state"),
        XDG_CACHE_HOME=str(state / "cache"),
        XDG_CONFIG_HOME=str(state / "config"),
        XDG_DATA_HOME=str(state / "data"),
        DSH_HOME=str(state / "dsh"),
        PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )
    # As installed: pip compiles a package's bytecode, so a user's processes do not compile
    # source at every start (~0.3 s each of the CLI, the server and the worker). A checkout run
    # with PYTHONDONTWRITEBYTECODE (this machine sets it) would; ``compiled`` writes it once.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    cmd = [
        sys.executable, "-m", "dsh_query_server.cli", "search", "--no-hub",
        "--persistence", f"claude:{home.claude}", "--persistence", f"codex:{home.codex}",
        "--json", "--limit", "50", PHRASE,
    ]  # fmt: skip
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    peak = TreePeak(proc.pid)
    out, err = proc.communicate(timeout=3600)
    wall = time.perf_counter() - t
    peak.stop()
    if proc.returncode != 0:
        raise RuntimeError(f"dsh-query search exit {proc.returncode}: {err.decode()[-800:]}")
    hits = len(json.loads(out)["items"])
    return wall, peak.peak_kib / 1024, hits, peak.most


def measure_home(home: Home, runs: int, given: str | None) -> list[Row]:
    size = int(home.plan["bytes"]) / 1e6  # type: ignore[call-overload]
    label = f"{size:,.0f} MB real-content home"
    binary, version = find_agentsview(given)
    log(f"{label}: {home.plan['transcripts']} transcripts, {home.plan['records']:,} records; "
        f"agentsview {version if binary else 'NOT MEASURED: ' + version}; "
        f"load {os.getloadavg()[0]:.2f}")  # fmt: skip
    floor(home)  # warm the page cache for everyone alike
    compiled()
    ours: list[float] = []
    theirs: list[float] = []
    floors: list[float] = []
    peaks: list[float] = []
    hits = procs = 0
    with tempfile.TemporaryDirectory(prefix="dsh-realhome-") as name:
        tmp = Path(name)
        for i in range(runs):
            warm(home)
            wall, peak, hits, procs = first_search(home, tmp)
            ours.append(wall)
            peaks.append(peak)
            if binary is not None:
                av_tmp = tmp / f"av{i}"
                av_tmp.mkdir()
                corpus = Corpus(home.claude, home.codex, 0, 0, 0)
                warm(home)
                theirs.append(Agentsview(binary, av_tmp, corpus).sync()[0])
                shutil.rmtree(av_tmp, ignore_errors=True)
            floors.append(floor(home)[0])
            log(f"  run {i + 1}: ours {wall:.2f} s ({hits} hits, peak {peak:.0f} MiB, "
                f"{procs} processes), agentsview sync "
                f"{theirs[-1] if theirs else float('nan'):.2f} s, floor {floors[-1]:.2f} s, "
                f"load {os.getloadavg()[0]:.2f}")  # fmt: skip
    o, f = statistics.median(ours), statistics.median(floors)
    rows = [Row(f"first search cold, {label}", o, "s", note=f"median of {runs}, {hits} hits")]
    if theirs:
        a = statistics.median(theirs)
        rows.append(
            Row(
                f"  vs agentsview {PINNED} sync, same home",
                o,
                "s",
                baseline=a,
                baseline_name="agentsview sync",
                ratio=a / o,
                target=">= 2x faster",
                ok=a / o >= 2,
            )
        )
    rows.append(
        Row(
            "  vs the floor (read + msgspec-decode every record)",
            o,
            "s",
            baseline=f,
            baseline_name="floor, this process",
            ratio=o / f,
            target="<= 4x the floor",
            ok=o / f <= 4,
        )
    )
    peak = max(peaks)
    rows.append(
        Row(
            "  peak RSS, server and workers",
            peak,
            "MiB",
            target="<= 200 MB",
            ok=peak * 1.048576 <= 200,
            note=f"largest sum of VmHWM of the processes alive together (at most {procs})",
        )
    )
    return rows
