"""The real-content home (issue 28): Claude Code and Codex homes built by replicating the real
transcripts in ``/work/shared/fixtures/`` (``DSH_FIXTURES`` overrides) with every id rewritten per
copy, to a target size. Seeded and deterministic; built once into
``~/.cache/dsh-query-bench/realhome-<size>mb-v3/``.

A copy is one Claude Code project session set (the four transcripts, the sub-agent transcript
taken from the sub-agent fixture's ``agent_progress`` records, with its ``meta.json``) plus one
Codex rollout. Each transcript of a copy repeats its fixture's records a heavy-tailed number of
times (1 to ~120: real homes hold a few very long sessions and many short ones), every repetition
with fresh uuids, tool/request/message ids and later timestamps, so no two records share an id
and the whole stays a valid log for both tools. The session id of a transcript is one fresh uuid
for all its repetitions.
"""

from __future__ import annotations

import json
import os
import random
import re
import time
import uuid
from calendar import timegm
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

VERSION = 3
FIXTURES = Path(os.environ.get("DSH_FIXTURES", "/work/shared/fixtures"))
CLAUDE_FIXTURES = (
    "marot-spotter-short",
    "marot-spotter-subagent",
    "marot-spotter-tool_heavy",
    "simonw-sample_session",
)
CODEX_FIXTURE = "simonw-sample_codex_session"
PROJECTS = (
    "spotter ridge lantern quill falcon garnet vortex juniper nimbus kestrel fjord harbor umber "
    "tundra meadow quarry glacier zephyr ember saffron kiln lumen dune atlas cobalt pebble rivet "
    "hollow jasper"
).split()
ORIGINAL_PROJECT = b"/home/marco/projects/spotter"
MAX_REPEAT = 120  # the sub-agent fixture (237 kB) repeated: a ~28 MB transcript, the longest

_IDS = re.compile(
    rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    rb"|(?:toolu|req|msg|call)_[A-Za-z0-9]{8,}"
    rb"|20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?Z"
)
_TIME = re.compile(rb"(20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?Z")


def _ms(stamp: bytes) -> int:
    m = _TIME.fullmatch(stamp)
    assert m is not None
    base = timegm(time.strptime(m.group(1).decode(), "%Y-%m-%dT%H:%M:%S"))
    frac = (m.group(2) or b"0").decode()
    return base * 1000 + int(frac[:3].ljust(3, "0"))


def _stamp(ms: int) -> bytes:
    head = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000))
    return f"{head}.{ms % 1000:03d}Z".encode()


@dataclass(frozen=True)
class Fixture:
    name: str
    lines: list[bytes]  # records, without their newline
    session_id: bytes  # the id the session keeps across repetitions ("" for Codex: rewritten)
    start_ms: int
    span_ms: int
    agent_id: bytes | None = None  # the sub-agent id of the sub-agent fixture


def _times(lines: list[bytes]) -> list[int]:
    return [_ms(m.group()) for line in lines for m in _TIME.finditer(line)]


def load_fixtures() -> tuple[list[Fixture], Fixture, list[bytes]]:
    """The Claude fixtures, the Codex rollout, and the sub-agent transcript's records taken from
    the sub-agent fixture's ``agent_progress`` records."""
    claude: list[Fixture] = []
    agent_lines: list[bytes] = []
    for name in CLAUDE_FIXTURES:
        lines = (FIXTURES / "claude-code" / f"{name}.jsonl").read_bytes().splitlines()
        lines = [x for x in lines if x.strip()]
        sid = next(json.loads(x)["sessionId"].encode() for x in lines if b'"sessionId"' in x)
        stamps = _times(lines)
        agent: bytes | None = None
        if name == "marot-spotter-subagent":
            agent_lines, agent = _subagent(lines)
        claude.append(Fixture(name, lines, sid, min(stamps), max(stamps) - min(stamps), agent))
    lines = (FIXTURES / "codex" / f"{CODEX_FIXTURE}.jsonl").read_bytes().splitlines()
    lines = [x for x in lines if x.strip()]
    stamps = _times(lines)
    codex = Fixture("codex", lines, b"", min(stamps), max(stamps) - min(stamps))
    return claude, codex, agent_lines


def _subagent(lines: list[bytes]) -> tuple[list[bytes], bytes]:
    """A sub-agent transcript (``<session>/subagents/agent-<id>.jsonl``) made of the messages the
    trunk's ``agent_progress`` records carry, chained by parentUuid as Claude Code writes it."""
    out: list[bytes] = []
    parent: str | None = None
    agent = ""
    for line in lines:
        rec = json.loads(line)
        data = rec.get("data")
        if rec.get("type") != "progress" or not isinstance(data, dict):
            continue
        if data.get("type") != "agent_progress" or not isinstance(data.get("message"), dict):
            continue
        msg = data["message"]
        agent = str(data["agentId"])
        record = {
            "parentUuid": parent,
            "isSidechain": True,
            "userType": "external",
            "cwd": rec["cwd"],
            "sessionId": rec["sessionId"],
            "version": rec["version"],
            "gitBranch": rec.get("gitBranch", ""),
            "agentId": agent,
            "type": msg["type"],
            "message": msg["message"],
            "uuid": msg["uuid"],
            "timestamp": msg["timestamp"],
        }
        parent = msg["uuid"]
        out.append(json.dumps(record, separators=(",", ":"), ensure_ascii=False).encode())
    return out, agent.encode()


class Rewriter:
    """One repetition's id map: every uuid and tool/request/message id gets a fresh one (the
    session's own id and the sub-agent's get the values given), every timestamp moves by
    ``shift_ms``."""

    def __init__(
        self, rng: random.Random, shift_ms: int, fixed: dict[bytes, bytes], project: bytes
    ) -> None:
        self.rng = rng
        self.shift = shift_ms
        # ids the pattern does not see (a 7-hex sub-agent id) are replaced as they are
        self.map: dict[bytes, bytes] = {k: v for k, v in fixed.items() if _IDS.fullmatch(k)}
        self.plain = [(k, v) for k, v in fixed.items() if not _IDS.fullmatch(k)]
        self.project = project

    def _fresh(self, old: bytes) -> bytes:
        if old[:1].isdigit() and old[4:5] == b"-" and old.endswith(b"Z"):
            return _stamp(_ms(old) + self.shift)
        if b"_" in old[:6]:
            prefix, _, rest = old.partition(b"_")
            alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
            body = "".join(self.rng.choice(alphabet) for _ in rest).encode()
            return prefix + b"_" + body
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4)).encode()

    def _sub(self, m: re.Match[bytes]) -> bytes:
        old = m.group()
        new = self.map.get(old)
        if new is None:
            new = self.map[old] = self._fresh(old)
        return new

    def line(self, line: bytes) -> bytes:
        line = _IDS.sub(self._sub, line)
        for old, new in self.plain:
            line = line.replace(old, new)
        return line.replace(ORIGINAL_PROJECT, self.project) if self.project else line


def repeats(rng: random.Random) -> int:
    """A heavy-tailed repetition count: most transcripts short, a few very long."""
    return min(MAX_REPEAT, int(rng.paretovariate(0.9)))


def write_transcript(
    path: Path,
    fixture_lines: list[bytes],
    times: int,
    rng: random.Random,
    start_ms: int,
    span_ms: int,
    fixed: dict[bytes, bytes],
    project: bytes,
    keep_first: int = 0,
) -> tuple[int, int]:
    """``times`` repetitions of the fixture records (after the first, its first ``keep_first``
    records are left out: a Codex rollout has one session_meta); bytes and records written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    records = 0
    with open(path, "wb") as f:
        for i in range(times):
            rw = Rewriter(rng, start_ms + i * (span_ms + 60_000), fixed, project)
            lines = fixture_lines if i == 0 else fixture_lines[keep_first:]
            f.write(b"".join(rw.line(x) + b"\n" for x in lines))
            records += len(lines)
    return path.stat().st_size, records


Progress = Callable[[int], None]


def build_home(root: Path, target_bytes: int, seed: int, progress: Progress) -> dict[str, object]:
    """Copies until the home holds ``target_bytes``; the plan (counts) is returned."""
    claude, codex, agent_lines = load_fixtures()
    rng = random.Random(seed)
    base = _ms(b"2026-03-01T00:00:00Z")
    total = files = records = copies = 0
    projects: dict[str, int] = {}
    weights = [1 / (i + 1) for i in range(len(PROJECTS))]
    while total < target_bytes:
        name = rng.choices(PROJECTS, weights)[0]
        projects[name] = projects.get(name, 0) + 1
        project = f"/home/marco/projects/{name}".encode()
        folder = root / "claude" / "projects" / f"-home-marco-projects-{name}"
        start = base + copies * 6 * 3600 * 1000
        for fx in claude:
            sid = str(uuid.UUID(int=rng.getrandbits(128), version=4)).encode()
            fixed = {fx.session_id: sid}
            times = repeats(rng)
            agent = "".join(rng.choice("0123456789abcdef") for _ in range(7)).encode()
            if fx.agent_id is not None:
                fixed[fx.agent_id] = agent
            shift = start - fx.start_ms
            n, r = write_transcript(
                folder / f"{sid.decode()}.jsonl",
                fx.lines,
                times,
                rng,
                shift,
                fx.span_ms,
                fixed,
                project,
            )
            total, records, files = total + n, records + r, files + 1
            if fx.agent_id is not None:
                sub = folder / sid.decode() / "subagents"
                n, r = write_transcript(
                    sub / f"agent-{agent.decode()}.jsonl",
                    agent_lines,
                    times,
                    rng,
                    shift,
                    fx.span_ms,
                    fixed,
                    project,
                )
                (sub / f"agent-{agent.decode()}.meta.json").write_text('{"agentType": "Plan"}')
                total, records, files = total + n, records + r, files + 1
        sid = str(uuid.UUID(int=rng.getrandbits(128), version=4)).encode()
        when = time.gmtime(start // 1000)
        day = root / "codex" / "sessions" / time.strftime("%Y/%m/%d", when)
        path = day / f"rollout-{time.strftime('%Y-%m-%dT%H-%M-%S', when)}-{sid.decode()}.jsonl"
        first = json.loads(codex.lines[0])["payload"]["id"].encode()
        n, r = write_transcript(
            path,
            codex.lines,
            repeats(rng),
            rng,
            start - codex.start_ms,
            codex.span_ms,
            {first: sid},
            b"",
            keep_first=1,
        )
        total, records, files = total + n, records + r, files + 1
        copies += 1
        progress(total)
    return {
        "copies": copies,
        "transcripts": files,
        "bytes": total,
        "records": records,
        "projects": projects,
        "fixtures": [*CLAUDE_FIXTURES, CODEX_FIXTURE],
        "seed": seed,
        "version": VERSION,
    }
