"""A seeded, realistic corpus of dsh sessions.

Sessions look like what dsh writes: turns with request headers, user messages, streamed chunk runs
(text and reasoning deltas, packed by the backends), assistant messages with tool calls, tool
results, step markers, todos, errors and aborts, titles, compactions that replace a span of the
surface with a summary, tool-result rewrites, forks seeded from a parent's prefix, and sub-agents
down to depth 3. Every log folds cleanly (semantics.md §2.1), so every read in the benchmark is a
real read, not an error path.

Search selectivity is controlled: three phrases are planted in a known fraction of sessions and
their words are kept out of the filler vocabulary, so "rare", "medium" and "common" mean what
they say.
"""

from __future__ import annotations

import copy
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

BASE_TIME = 1_760_000_000_000

# Phrase -> fraction of sessions that contain it (in user, assistant or tool text).
PHRASES = {
    "rare": ("kubernetes ingress timeout", 0.002),
    "medium": ("flaky retry backoff", 0.05),
    "common": ("run the tests", 0.40),
}
NO_MATCH = "zzyzx quokka"  # never planted: a query whose cost is the reconcile and the lookup

_FILLER = """
the a an of to in for on with as at by from into over after before about between through during
without under around among is are was were be been has have had do does did will would can could
should may might must not no yes this that these those it its we you they he she i me my our your
their them what which who when where why how all any both each few more most other some such only
own same so than too very just also then now here there up down out off again further once
function method class module package import export return value values variable constant type
types string number integer boolean array object map set list dict tuple queue stack tree graph
node edge vertex path file files folder directory repository branch commit merge rebase diff patch
config configuration setting settings option options flag flags parameter argument arguments
request response server client socket port host address protocol header headers body payload
json yaml toml schema migration database table column row index query transaction lock cache
buffer stream channel worker thread process signal event events handler callback promise future
async await sync loop iterator generator decorator context manager session sessions token tokens
user users account permission role policy error errors exception warning failure bug fix patch
change changes refactor rename move delete create update insert select filter sort group join
build compile bundle deploy release version upgrade install dependency dependencies lockfile
docker image container volume network cluster pod service replica deployment namespace secret
log logs logging metric metrics trace tracing span latency throughput memory cpu disk usage limit
benchmark profile profiler hot path allocation garbage collector leak pointer reference borrow
parser lexer token grammar syntax ast visitor transform emit codegen optimizer inline constant
frontend backend api endpoint route middleware controller view template render component state
props hook effect reducer store action dispatch selector query mutation subscription resolver
css style layout grid flex margin padding color theme dark light contrast font icon button input
form field validation validator message messages notification toast modal dialog menu sidebar
editor extension plugin command palette keybinding shortcut workspace terminal shell script
python rust typescript javascript golang java kotlin swift ruby elixir haskell ocaml scala zig
linux macos windows kernel driver filesystem permission chmod symlink mount unmount pipe fork
spawn exit status code stdout stderr stdin output input format parse serialize deserialize
encode decode compress decompress hash checksum signature certificate key keys secretly safely
quickly slowly carefully directly indirectly correctly incorrectly probably definitely maybe
let me check look see read write open close start stop restart reload refresh retry again later
first second third last next previous current old new small large big tiny huge fast slow
""".split()
_FORBIDDEN = {w for _, (p, _) in PHRASES.items() for w in p.split()} | set(NO_MATCH.split())
VOCAB = [w for w in dict.fromkeys(_FILLER) if w not in _FORBIDDEN]

PROJECTS = [
    "/home/ana/projects/payments-api",
    "/home/ana/projects/web-console",
    "/home/ana/src/dsh",
    "/home/bo/work/infra",
    "/home/bo/work/ml-pipeline",
    "/srv/repos/monorepo",
    "/home/chen/code/editor",
    "/home/chen/code/compiler",
    "/home/dev/scratch",
    "/work/search-service",
    "/work/query-server",
    "/home/eve/notes",
    "/opt/build/agent",
    "/home/fay/apps/mobile",
    "/home/fay/apps/backend",
] + [f"/home/user{i}/project-{i}" for i in range(30)]
TOOLS = [
    (
        "bash",
        lambda r: (
            f'{{"cmd":"{r.choice(["pytest -x", "make build", "git status", "ls -la", "cargo test", "npm run lint"])}"}}'
        ),
    ),
    ("read", lambda r: f'{{"path":"src/{r.choice(VOCAB)}.py"}}'),
    (
        "edit",
        lambda r: (
            f'{{"path":"src/{r.choice(VOCAB)}.ts","old":"{r.choice(VOCAB)}","new":"{r.choice(VOCAB)}"}}'
        ),
    ),
    ("grep", lambda r: f'{{"pattern":"{r.choice(VOCAB)}","path":"."}}'),
    ("web_search", lambda r: f'{{"q":"{r.choice(VOCAB)} {r.choice(VOCAB)}"}}'),
]
PRESETS = ["explorer", "reviewer", "coder", "minimal"]


def words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choices(VOCAB, k=n))


def sentence(rng: random.Random, n: int, plant: str | None = None) -> str:
    text = words(rng, n)
    if plant:
        cut = rng.randint(0, max(0, n))
        parts = text.split(" ")
        text = " ".join(parts[:cut] + [plant] + parts[cut:])
    return text[:1].upper() + text[1:] + "."


@dataclass
class SessionPlan:
    id: str
    length: int
    header: dict[str, Any]
    plants: list[str] = field(default_factory=list)
    parent: str | None = None
    seed_length: int | None = None
    live: bool = False
    persisted_length: int | None = None  # < length: the persisted copy lags the live log
    role: str = "root"

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "length": self.length,
            "live": self.live,
            "role": self.role,
            "persistedLength": self.persisted_length
            if self.persisted_length is not None
            else self.length,
            "plants": self.plants,
            "parent": self.parent,
        }


class Log:
    """One session's events as dicts, with the surface tracked so replacements are valid."""

    def __init__(self, rng: random.Random, sid: str, start: int, plants: list[str]) -> None:
        self.rng = rng
        self.sid = sid
        self.time = start
        self.events: list[dict[str, Any]] = []
        self.nodes: list[int] = []  # the current surface, in order
        self.results: dict[int, dict[str, Any]] = {}  # current tool/result seq -> data
        self.mid = 0
        self.turn_no = 0
        self.plants = list(plants)
        self.titled = False

    def _add(self, type: str, data: Any, **envelope: Any) -> int:
        self.time += self.rng.randint(5, 4000)
        seq = len(self.events)
        event = {"type": type, "seq": seq, "time": self.time, "data": data}
        event.update(envelope)
        self.events.append(event)
        return seq

    def _surface(
        self, type: str, data: Any, op: Any = "append", sources: list[int] | None = None
    ) -> int:
        envelope: dict[str, Any] = {"surfaceOp": op}
        if sources is not None:
            envelope["sourceEventSeqs"] = sources
        seq = self._add(type, data, **envelope)
        if op == "append":
            self.nodes.append(seq)
        else:
            start = self.nodes.index(op["start"])
            end = self.nodes.index(op["end"])
            for gone in self.nodes[start : end + 1]:
                self.results.pop(gone, None)
            self.nodes[start : end + 1] = [seq]
        return seq

    def _id(self) -> str:
        self.mid += 1
        return f"{self.sid}-m{self.mid}"

    def _text(self, n: int) -> str:
        plant = None
        if self.plants and self.rng.random() < 0.35:
            plant = self.plants.pop()
        return sentence(self.rng, n, plant)

    def seed_from(self, events: list[dict[str, Any]]) -> None:
        """A fork: the parent's prefix verbatim, then the end-seed marker."""
        for event in events:
            self.events.append(copy.deepcopy(event))
            self.time = max(self.time, event["time"])
        # Replay the prefix's surface so later replacements name current nodes.
        for event in self.events:
            op = event.get("surfaceOp")
            if op is None:
                continue
            if op == "append":
                self.nodes.append(event["seq"])
            else:
                start, end = self.nodes.index(op["start"]), self.nodes.index(op["end"])
                for gone in self.nodes[start : end + 1]:
                    self.results.pop(gone, None)
                self.nodes[start : end + 1] = [event["seq"]]
            if event["type"] == "tool/result":
                self.results[event["seq"]] = event["data"]
            self.turn_no = max(
                self.turn_no, event["data"].get("turn", 0) if isinstance(event["data"], dict) else 0
            )
        self._add("session/end-seed", {})

    def turn(self) -> None:
        rng = self.rng
        self.turn_no += 1
        t = self.turn_no
        self._add("turn/start", {"turn": t})
        if t == 1 or rng.random() < 0.03:
            self._add(
                "request/header",
                {
                    "header": {
                        "config": {
                            "provider": "deepseek",
                            "model": "deepseek-chat",
                            "reasoningEffort": "medium",
                        }
                    },
                    "reason": "initial" if t == 1 else "change",
                },
            )
            self._add(
                "request/context",
                {"provider": "deepseek", "model": "deepseek-chat", "contextWindow": 128000},
            )
        user = {
            "id": self._id(),
            "role": "user",
            "content": [{"type": "text", "text": self._text(rng.randint(5, 60))}],
            "source": {"kind": "user"},
        }
        first_user = self._surface("user/message", user)
        steps = rng.choices([1, 2, 3, 4], weights=[50, 25, 15, 10])[0]
        for step in range(1, steps + 1):
            self._add("step/start", {"turn": t, "step": step})
            if rng.random() < 0.3:
                for _ in range(rng.randint(3, 20)):
                    self._add(
                        "assistant/chunk",
                        {
                            "turn": t,
                            "step": step,
                            "chunk": {
                                "type": "reasoning-delta",
                                "index": 0,
                                "text": words(rng, rng.randint(1, 4)) + " ",
                            },
                        },
                    )
            text = self._text(rng.randint(15, 160))
            pieces = text.split(" ")
            per = max(1, len(pieces) // rng.randint(3, 40))
            for i in range(0, len(pieces), per):
                self._add(
                    "assistant/chunk",
                    {
                        "turn": t,
                        "step": step,
                        "chunk": {
                            "type": "text-delta",
                            "index": 1,
                            "text": " ".join(pieces[i : i + per]) + " ",
                        },
                    },
                )
            calls = []
            if step < steps or rng.random() < 0.2:
                for _ in range(rng.choices([1, 2, 3], weights=[70, 20, 10])[0]):
                    name, args = rng.choice(TOOLS)
                    calls.append((f"call-{self._id()}", name, args(rng)))
            content: list[dict[str, Any]] = [
                {"type": "reasoning", "text": words(rng, rng.randint(5, 30))},
                {"type": "text", "text": text},
            ]
            content += [
                {"type": "tool-call", "id": c, "name": n, "arguments": a} for c, n, a in calls
            ]
            message = {
                "id": self._id(),
                "role": "assistant",
                "content": content,
                "source": {"kind": "model", "provider": "deepseek", "model": "deepseek-chat"},
            }
            self._surface(
                "assistant/message",
                {
                    "turn": t,
                    "step": step,
                    "message": message,
                    "usage": {
                        "inputTokens": rng.randint(100, 90000),
                        "outputTokens": rng.randint(10, 4000),
                    },
                },
            )
            for call_id, name, args in calls:
                call = self._add(
                    "tool/call",
                    {"turn": t, "step": step, "callId": call_id, "name": name, "arguments": args},
                )
                lines = rng.randint(1, 30)
                output = "\n".join(self._text(rng.randint(3, 14)) for _ in range(lines))
                data: dict[str, Any] = {
                    "turn": t,
                    "step": step,
                    "message": {
                        "id": f"{self.sid}-result-{call_id}",
                        "role": "user",
                        "content": [
                            {
                                "type": "tool-result",
                                "toolCallId": call_id,
                                "content": [{"type": "text", "text": output}],
                            }
                        ],
                        "source": {"kind": "tool", "callId": call_id},
                    },
                }
                if rng.random() < 0.05:
                    data["error"] = {"name": "ToolError", "code": "E_TOOL"}
                seq = self._surface("tool/result", data, sources=[call])
                self.results[seq] = data
            self._add("step/end", {"turn": t, "step": step})
        if rng.random() < 0.15:
            self._add(
                "todo/write",
                {
                    "todos": [
                        {
                            "content": words(rng, rng.randint(2, 8)),
                            "status": rng.choice(["pending", "in_progress", "completed"]),
                        }
                        for _ in range(rng.randint(1, 5))
                    ]
                },
            )
        roll = rng.random()
        if roll < 0.04:
            reason: dict[str, Any] = {
                "kind": "error",
                "error": {"message": words(rng, 6), "code": "E_PROVIDER"},
            }
        elif roll < 0.06:
            reason = {"kind": "aborted", "reason": {"kind": "user"}}
        else:
            reason = {"kind": "completed"}
        self._add("turn/end", {"turn": t, "reason": reason})
        if not self.titled and rng.random() < 0.6:
            self.titled = True
            self._add(
                "session/title",
                {
                    "title": words(rng, rng.randint(2, 6)).title(),
                    "messageSeqs": [first_user],
                    "source": rng.choice(
                        [
                            {"kind": "user"},
                            {"kind": "fallback"},
                            {"kind": "provider", "provider": "deepseek"},
                        ]
                    ),
                },
            )
        if len(self.nodes) > 40 and rng.random() < 0.5:
            self.compact()
        elif self.results and rng.random() < 0.05:
            self.rewrite_result()

    def compact(self) -> None:
        """Replace all but the last few surface nodes with one summary (dsh's compaction)."""
        keep = self.rng.randint(2, 6)
        span = self.nodes[: len(self.nodes) - keep]
        self._add("compaction/start", {"reason": "threshold"})
        summary = {
            "id": self._id(),
            "role": "user",
            "source": {"kind": "plugin", "plugin": "compaction"},
            "content": [
                {"type": "text", "text": "Summary so far: " + self._text(self.rng.randint(40, 200))}
            ],
        }
        self._surface(
            "user/message",
            summary,
            op={"op": "replace", "start": span[0], "end": span[-1]},
            sources=list(span),
        )
        self._add("compaction/end", {"shadowedSeqs": list(span)})

    def rewrite_result(self) -> None:
        """A tool-result rewrite: same message, only the content changes (truncated output)."""
        target = self.rng.choice(list(self.results))
        data = copy.deepcopy(self.results[target])
        data["message"]["content"][0]["content"] = [{"type": "text", "text": "[output truncated]"}]
        seq = self._surface(
            "tool/result",
            data,
            op={"op": "replace", "start": target, "end": target},
            sources=[target],
        )
        self.results[seq] = data


def lengths(rng: random.Random, count: int, total: int, lo: int, hi: int) -> list[int]:
    """``count`` heavy-tailed lengths in [lo, hi] summing to about ``total``."""
    if count <= 0:
        return []
    raw = [math.exp(rng.gauss(0, 1.3)) for _ in range(count)]
    target = max(total, lo * count)
    scale = target / sum(raw)
    out = [min(hi, max(lo, int(x * scale))) for x in raw]
    # Nudge toward the exact total (clipping moved it).
    diff = target - sum(out)
    order = sorted(range(count), key=lambda i: -out[i])
    i = 0
    while diff and i < 10 * count:
        j = order[i % count]
        step = max(
            -(out[j] - lo), min(hi - out[j], diff // max(1, count // 10) or (1 if diff > 0 else -1))
        )
        out[j] += step
        diff -= step
        i += 1
    return out


@dataclass
class CorpusSpec:
    sessions: int
    events: int
    seed: int = 1
    long_length: int = 100_000
    short_length: int = 1_000
    live_fraction: float = 0.30
    lagging_fraction: float = 0.35  # of the live sessions

    def key(self) -> str:
        return (
            f"s{self.sessions}-e{self.events}-seed{self.seed}-long{self.long_length}"
            f"-short{self.short_length}-live{self.live_fraction}-lag{self.lagging_fraction}-v3"
        )


PROBE_LONG = "probe-long"
PROBE_SHORT = "probe-short"


def plan(spec: CorpusSpec) -> list[SessionPlan]:
    """Every session's id, header, length, role and live/lagging state, in creation order."""
    rng = random.Random(spec.seed)
    n_other = max(0, spec.sessions - 2)
    other_total = max(spec.events - spec.long_length - spec.short_length, 10 * n_other)
    sizes = lengths(rng, n_other, other_total, 10, 100_000)
    plans: list[SessionPlan] = []
    created = BASE_TIME
    depth: dict[str, int] = {}
    for i, size in enumerate(sizes):
        created += rng.randint(1_000, 600_000)
        sid = f"s{i:06d}-{rng.getrandbits(32):08x}"
        header: dict[str, Any] = {"version": 0, "id": sid, "createdAt": created}
        if rng.random() < 0.97:
            header["cwd"] = rng.choice(PROJECTS)
        role = "root"
        parent = None
        roll = rng.random()
        if plans and roll < 0.10:
            parent_plan = plans[rng.randrange(max(0, len(plans) - 200), len(plans))]
            d = depth.get(parent_plan.id, 0) + 1
            if d <= 3:
                role, parent = "subagent", parent_plan.id
                header.update(
                    parentSession=parent,
                    origin="subagent",
                    delegationDepth=d,
                    agentPreset=rng.choice(PRESETS),
                )
                if "cwd" in parent_plan.header:
                    header["cwd"] = parent_plan.header["cwd"]
                depth[sid] = d
        elif plans and roll < 0.15:
            role, parent = "fork", plans[rng.randrange(max(0, len(plans) - 200), len(plans))].id
            header["parentSession"] = parent
        elif rng.random() < 0.2:
            header["agentPreset"] = rng.choice(PRESETS)
        plants = [phrase for _, (phrase, share) in PHRASES.items() if rng.random() < share]
        plans.append(SessionPlan(sid, size, header, plants, parent, role=role))
    # The two probes are persisted only: readEvent on 1k vs 100k events, listEvents/traceEvent.
    for sid, size in ((PROBE_SHORT, spec.short_length), (PROBE_LONG, spec.long_length)):
        created += 1000
        plans.append(
            SessionPlan(
                sid,
                size,
                {"version": 0, "id": sid, "createdAt": created, "cwd": "/work/bench"},
                [PHRASES["medium"][0]],
                role="probe",
            )
        )
    candidates = [p for p in plans if p.role != "probe"]
    for p in rng.sample(candidates, int(len(candidates) * spec.live_fraction)):
        p.live = True
        if rng.random() < spec.lagging_fraction:
            p.persisted_length = max(1, int(p.length * rng.uniform(0.3, 0.9)))
    return plans


def generate(spec: CorpusSpec) -> Iterator[tuple[SessionPlan, list[dict[str, Any]]]]:
    """Each planned session with its full log (a list of event dicts with seq and time)."""
    prefixes: dict[str, list[dict[str, Any]]] = {}  # recent sessions' first events, for forks
    order: list[str] = []
    for p in plan(spec):
        rng = random.Random(f"{spec.seed}:{p.id}")
        log = Log(rng, p.id, p.header["createdAt"], p.plants)
        if p.role == "fork" and p.parent in prefixes:
            prefix = prefixes[p.parent]
            k = rng.randint(1, max(1, min(len(prefix), p.length - 2, 60)))
            log.seed_from(prefix[:k])
            p.seed_length = k
            p.header["seedLength"] = k
        elif p.role == "fork":
            p.role = "root"
            p.header.pop("parentSession", None)
        while len(log.events) < p.length:
            log.turn()
        events = log.events[: p.length]
        if p.role != "probe":
            prefixes[p.id] = events[:80]
            order.append(p.id)
            if len(order) > 300:
                prefixes.pop(order.pop(0), None)
        yield p, events
