"""Usage against ccusage (usage.md §6, issue 27): on one generated Claude Code home whose
responses are written as several records each (as Claude Code does), our daily input, output,
cache-read and cache-write totals against ``ccusage daily --json --offline --timezone UTC``, and
the time of ``dsh-query usage --by day --json`` against it, interleaved, p50 of ``--runs`` each.

    python -m bench.usage --sessions 1000

ccusage (npm, pinned) is installed for the bench only, into ``$XDG_CACHE_HOME/dsh-query-bench``
(never by ``make test``). When it cannot be installed or run, its column says why and no number
is invented. agentsview's ``usage daily`` (PyPI ``agentsview``, ``make bench-deps``) is compared
the same way when it is installed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

CCUSAGE = "20.0.24"
T0 = 1_767_225_600  # 2026-01-01T00:00:00Z
DAYS = 30
MODELS = ["claude-sonnet-4-5-20250929", "claude-opus-4-5-20251101", "claude-haiku-4-5-20251001"]
WORDS = "alpha beta gamma delta needle retry budget config parser window memo index".split()
FIELDS = {  # ours -> ccusage's daily field
    "input": "inputTokens",
    "output": "outputTokens",
    "cacheRead": "cacheReadTokens",
    "cacheWrite": "cacheCreationTokens",
}


def _stamp(t: float) -> str:
    whole = int(t)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{int(t * 1000) % 1000:03d}Z"


class Transcript:
    """One Claude Code transcript being written: records chained by parentUuid."""

    def __init__(self, rng: random.Random, sid: str, start: float, sidechain: bool) -> None:
        self.rng, self.sid, self.t, self.sidechain = rng, sid, start, sidechain
        self.last: str | None = None
        self.lines: list[bytes] = []
        self.n = 0

    def put(self, record: dict[str, Any]) -> None:
        self.t += self.rng.uniform(0.5, 40)
        uid = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
        base = {
            "parentUuid": self.last,
            "isSidechain": self.sidechain,
            "userType": "external",
            "cwd": "/work/proj",
            "sessionId": self.sid,
            "version": "2.0.30",
            "type": record["type"],
            "uuid": uid,
            "timestamp": _stamp(self.t),
            **record,
        }
        self.lines.append(json.dumps(base, separators=(",", ":")).encode())
        self.last = uid

    def response(self, model: str, context: int) -> None:
        """One API response as Claude Code writes it: one record per content block, the same
        message.id and requestId on each, the usage known so far on each (output grows)."""
        rng = self.rng
        mid = "msg_" + "".join(rng.choice("abcdefghijkLMNOPQ0123456789") for _ in range(24))
        request = "req_" + "".join(rng.choice("ABCDEFGHJK0123456789") for _ in range(24))
        read = int(context * rng.uniform(0.6, 0.98))
        write = rng.randint(0, max(1, context - read))
        plain = rng.randint(1, 12)
        output = rng.randint(20, 2400)
        blocks: list[dict[str, Any]] = [{"type": "thinking", "thinking": "…", "signature": "s"}]
        blocks.append({"type": "text", "text": " ".join(rng.choices(WORDS, k=12))})
        if rng.random() < 0.7:
            blocks.append(
                {"type": "tool_use", "id": f"toolu_{mid[4:]}", "name": "Bash", "input": {"c": 1}}
            )
        for k, block in enumerate(blocks):
            usage = {
                "input_tokens": plain,
                "cache_creation_input_tokens": write,
                "cache_read_input_tokens": read,
                # every record but the last carries the count so far
                "output_tokens": output if k == len(blocks) - 1 else rng.randint(1, output),
                "service_tier": "standard",
            }
            message: dict[str, Any] = {"id": mid, "type": "message", "role": "assistant"}
            message["model"] = model
            message.update(content=[block], stop_reason=None, usage=usage)
            self.put({"type": "assistant", "requestId": request, "message": message})
            if block["type"] == "tool_use":
                result = {"type": "tool_result", "tool_use_id": block["id"], "content": "ok"}
                self.put({"type": "user", "message": {"role": "user", "content": [result]}})

    def body(self) -> bytes:
        return b"\n".join(self.lines) + b"\n"


def claude_usage_home(root: Path, sessions: int, seed: int = 27) -> dict[str, int]:
    """``sessions`` trunks over 30 days (some with sub-agents), each response several records."""
    rng = random.Random(seed)
    counts = {"trunks": 0, "agents": 0, "responses": 0, "records": 0}
    for k in range(sessions):
        sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        project = root / "projects" / f"-work-proj{k % 12}"
        project.mkdir(parents=True, exist_ok=True)
        start = T0 + rng.uniform(0, DAYS * 86_400)
        trunk = Transcript(rng, sid, start, sidechain=False)
        model = rng.choice(MODELS)
        context = rng.randint(8_000, 30_000)
        for _ in range(max(1, min(60, int(rng.paretovariate(1.3) * 4)))):
            trunk.put({"type": "user", "message": {"role": "user", "content": "next step"}})
            for _ in range(rng.randint(1, 4)):
                trunk.response(model, context)
                context += rng.randint(200, 9_000)
                counts["responses"] += 1
        (project / f"{sid}.jsonl").write_bytes(trunk.body())
        counts["trunks"] += 1
        counts["records"] += len(trunk.lines)
        if rng.random() < 0.15:
            sub = project / sid / "subagents"
            sub.mkdir(parents=True, exist_ok=True)
            agent = Transcript(rng, sid, start + 60, sidechain=True)
            agent.put({"type": "user", "message": {"role": "user", "content": "sub task"}})
            for _ in range(rng.randint(1, 5)):
                agent.response(MODELS[2], rng.randint(5_000, 20_000))
                counts["responses"] += 1
            name = f"a{k:05d}"
            (sub / f"agent-{name}.jsonl").write_bytes(agent.body())
            (sub / f"agent-{name}.meta.json").write_text('{"agentType":"general-purpose"}')
            counts["agents"] += 1
            counts["records"] += len(agent.lines)
    return counts


# -- the two tools ---------------------------------------------------------------------------


def ccusage_bin() -> tuple[Path | None, str]:
    """The pinned ccusage, installed on first use into the bench's own cache."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    prefix = cache / "dsh-query-bench" / f"ccusage-{CCUSAGE}"
    binary = prefix / "node_modules" / ".bin" / "ccusage"
    if binary.exists():
        return binary, ""
    npm = shutil.which("npm")
    if npm is None:
        return None, "npm not found"
    prefix.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", "--prefix", str(prefix), f"ccusage@{CCUSAGE}"],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0 or not binary.exists():
        return None, f"npm install ccusage@{CCUSAGE} failed: {done.stderr.strip()[-200:]}"
    return binary, ""


def run_ccusage(binary: Path, home: Path, env: dict[str, str]) -> tuple[float, dict[str, Any]]:
    command = [str(binary), "daily", "--json", "--offline", "--timezone", "UTC"]
    t = time.perf_counter()
    done = subprocess.run(
        command, capture_output=True, text=True, env={**env, "CLAUDE_CONFIG_DIR": str(home)}
    )
    elapsed = time.perf_counter() - t
    if done.returncode != 0:
        raise RuntimeError(f"ccusage failed: {done.stderr.strip()[-300:]}")
    return elapsed, json.loads(done.stdout)


def run_ours(home: Path, env: dict[str, str]) -> tuple[float, dict[str, Any]]:
    command = [sys.executable, "-m", "dsh_query_server.cli", "usage", "--by", "day", "--json"]
    command += ["--tz", "UTC", "--persistence", f"claude:{home}"]
    t = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - t
    if done.returncode != 0:
        raise RuntimeError(f"dsh-query usage failed: {done.stderr.strip()[-300:]}")
    return elapsed, json.loads(done.stdout)


def run_server(home: Path, env: dict[str, str], runs: int) -> tuple[float, float, list[float]]:
    """A server kept running (as an editor, the MCP server or a hub keeps one): its start, its
    first summary (every log read) and the next ones (only changed logs read, usage.md §4.2)."""
    from dsh_query_server.client import StdioClient

    t = time.perf_counter()
    client = StdioClient(
        ["--persistence", f"claude:{home}"],
        initialization_options={"search": {"openAt": "never"}},
        env=env,
    )
    start = time.perf_counter() - t
    params = {"groupBy": "day", "timeZone": "UTC"}
    try:
        t = time.perf_counter()
        client.request("sessionQuery/usageSummary", params)
        first = time.perf_counter() - t
        warm = []
        for _ in range(runs):
            t = time.perf_counter()
            client.request("sessionQuery/usageSummary", params)
            warm.append(time.perf_counter() - t)
    finally:
        client.close()
    return start, first, warm


def compare(ours: dict[str, Any], theirs: dict[str, Any]) -> list[str]:
    """Every day and field where the daily totals differ (empty when they agree exactly)."""
    mine = {row["key"]: row["total"] for row in ours["rows"]}
    other = {row.get("period", row.get("date")): row for row in theirs.get("daily", [])}
    out = []
    for day in sorted(set(mine) | set(other)):
        for field, their_field in FIELDS.items():
            a = (mine.get(day) or {}).get(field) or 0
            b = (other.get(day) or {}).get(their_field) or 0
            if a != b:
                out.append(f"{day} {field}: ours {a}, ccusage {b}")
    return out


def agentsview_usage(home: Path, tmp: Path, ours: dict[str, Any]) -> list[str]:
    """agentsview's ``usage daily`` on the same home (it reads its own database, so ``sync``
    first, timed apart), compared with ours day by day."""
    binary = shutil.which("agentsview") or str(Path(sys.executable).parent / "agentsview")
    if not Path(binary).exists():
        return ["agentsview: not installed (make bench-deps): not compared"]
    data, av_home = tmp / "av-data", tmp / "av-home"
    data.mkdir(mode=0o700)
    av_home.mkdir(mode=0o700)
    env = {
        **os.environ,
        "HOME": str(av_home),
        "XDG_CONFIG_HOME": str(av_home),
        "XDG_DATA_HOME": str(av_home),
        "XDG_CACHE_HOME": str(av_home),
        "XDG_STATE_HOME": str(av_home),
        "AGENTSVIEW_DATA_DIR": str(data),
        "CLAUDE_PROJECTS_DIR": str(home / "projects"),
        "CLAUDE_CONFIG_DIR": str(home),
        "CODEX_SESSIONS_DIR": str(tmp / "no-codex"),
        "CODEX_HOME": str(tmp / "no-codex"),
        "AGENTSVIEW_TELEMETRY_ENABLED": "0",
        "AGENTSVIEW_DISABLE_UPDATE_CHECK": "1",
        "AGENTSVIEW_NO_BROWSER": "1",
        "AGENTSVIEW_NO_DAEMON": "1",
    }
    t = time.perf_counter()
    done = subprocess.run([binary, "sync"], env=env, capture_output=True, text=True)
    sync = time.perf_counter() - t
    if done.returncode != 0:
        return [f"agentsview sync failed: {done.stderr.strip()[-200:]}"]
    command = [binary, "usage", "daily", "--json", "--all", "--offline", "--no-sync"]
    t = time.perf_counter()
    done = subprocess.run([*command, "--timezone", "UTC"], env=env, capture_output=True, text=True)
    report = time.perf_counter() - t
    if done.returncode != 0:
        return [f"agentsview usage daily failed: {done.stderr.strip()[-200:]}"]
    theirs = json.loads(done.stdout)
    diffs = compare(ours, theirs)
    cost = (theirs.get("totals", {}).get("totalCost") or {}).get("microdollars")
    return [
        f"agentsview sync {sync:.2f} s, then usage daily --json --offline {report:.2f} s",
        "  daily totals: "
        + (f"{len(diffs)} differences: {diffs[:5]}" if diffs else "equal on every day"),
        f"  agentsview's cost (LiteLLM prices, microdollars): {cost}",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="dsh-usage-bench-") as tmp:
        home = Path(tmp) / ".claude"
        made = claude_usage_home(home, args.sessions)
        size = sum(p.stat().st_size for p in home.rglob("*.jsonl"))
        print(
            f"home: {made['trunks']} sessions + {made['agents']} sub-agents, "
            f"{made['responses']} responses in {made['records']} records, {size / 1e6:.1f} MB"
        )
        env = {**os.environ, "HOME": tmp, "XDG_CACHE_HOME": str(Path(tmp) / "cache")}
        env["XDG_STATE_HOME"] = str(Path(tmp) / "state")
        binary, why = ccusage_bin()
        ours_times: list[float] = []
        their_times: list[float] = []
        ours = theirs = None
        for _ in range(args.runs):  # interleaved, so both see the same machine
            elapsed, ours = run_ours(home, env)
            ours_times.append(elapsed)
            if binary is not None:
                elapsed, theirs = run_ccusage(binary, home, env)
                their_times.append(elapsed)
        assert ours is not None
        mine = statistics.median(ours_times)
        print(f"dsh-query usage --by day --json   p50 {mine:.2f} s  (runs {ours_times})")
        total = ours["total"]
        print(
            f"  total: {total['responses']} responses, input {total['input']}, output "
            f"{total['output']}, cache read {total['cacheRead']}, cache write "
            f"{total['cacheWrite']}, ${total['costUsd']}"
        )
        if binary is None or theirs is None:
            print(f"ccusage: {why}")
        else:
            other = statistics.median(their_times)
            print(f"ccusage daily --json --offline    p50 {other:.2f} s  (runs {their_times})")
            print(f"  speed: ccusage's time / ours = {other / mine:.2f}")
            diffs = compare(ours, theirs)
            days = len(ours["rows"])
            if diffs:
                print(f"  daily totals: {len(diffs)} differences over {days} days:")
                for line in diffs[:20]:
                    print("   ", line)
            else:
                print(
                    f"  daily totals: equal on all {days} days "
                    "(input, output, cache read, cache write)"
                )
            cost = theirs.get("totals", {}).get("totalCost")
            print(f"  ccusage's cost (its own LiteLLM prices): {cost}")
        start, first, warm = run_server(home, env, max(3, args.runs))
        print(
            f"running server: start {start:.2f} s, first summary {first:.2f} s, "
            f"next summaries p50 {statistics.median(warm):.3f} s (runs {[round(w, 3) for w in warm]})"
        )
        if their_times:
            other = statistics.median(their_times)
            print(f"  speed, running server: {other / statistics.median(warm):.1f}x ccusage's")
        for line in agentsview_usage(home, Path(tmp), ours):
            print(line)


if __name__ == "__main__":
    main()
