"""``dsh-query demo`` and ``dsh-query serve --demo``: a realistic demo corpus, built only through
the producer methods (protocol.md §4), by a producer over JSON-RPC or inside the server.

Three projects; live sessions with a compaction that replaces earlier surface nodes, a tool-result
rewrite, a fork seeded from its parent, sub-agents two levels deep and titles; some sessions are
checkpointed, one persisted copy lags its live log, and one session is persisted only.
"""

from __future__ import annotations

import argparse
import itertools
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from ..client import Client
from .connect import connect
from .events import show_events
from .render import safe, show_event_trace, show_lineage, show_sessions

if TYPE_CHECKING:
    from ..core.runtime import Runtime

DEMO_WORKSPACE = "/home/ana/projects/payments-api"  # the demo's main project
BASE_TIME = 1_764_460_800_000  # 2025-11-30T00:00:00Z, so the demo looks the same every run


class Producer(Protocol):
    def create(self, header: dict[str, Any], seed: list[dict[str, Any]] | None = None) -> None: ...

    def append(self, session_id: str, events: list[dict[str, Any]]) -> None: ...

    def checkpoint(self, session_id: str) -> None: ...

    def remove(self, session_id: str) -> None: ...


class _Log:
    """Builds one session's events with message ids, turns and times that look real."""

    def __init__(self, session_id: str, start: int) -> None:
        self.sid = session_id
        self.time = start
        self.ids = itertools.count(1)
        self.events: list[dict[str, Any]] = []

    def _add(self, type: str, data: Any, **envelope: Any) -> int:
        self.time += 1500
        seq = len(self.events)
        self.events.append({"type": type, "seq": seq, "time": self.time, "data": data, **envelope})
        return seq

    def _mid(self) -> str:
        return f"{self.sid}-m{next(self.ids)}"

    def turn(self, turn: int) -> None:
        self._add("turn/start", {"turn": turn})

    def end(self, turn: int, kind: str = "completed") -> None:
        self._add("turn/end", {"turn": turn, "reason": {"kind": kind}})

    def user(self, text: str, **envelope: Any) -> int:
        data = {
            "id": self._mid(),
            "role": "user",
            "content": [{"type": "text", "text": text}],
            "source": {"kind": "user"},
        }
        return self._add("user/message", data, surfaceOp=envelope.pop("op", "append"), **envelope)

    def assistant(
        self,
        text: str,
        turn: int = 1,
        *,
        tool: tuple[str, str, str] | None = None,
        context: int | None = None,
        **envelope: Any,
    ) -> int:
        content: list[dict[str, Any]] = [
            {"type": "reasoning", "text": "thinking about it"},
            {"type": "text", "text": text},
        ]
        if tool:
            content.append(
                {"type": "tool-call", "id": tool[0], "name": tool[1], "arguments": tool[2]}
            )
        data = {
            "turn": turn,
            "step": 1,
            "message": {
                "id": self._mid(),
                "role": "assistant",
                "content": content,
                "source": {"kind": "model", "provider": "deepseek", "model": "deepseek-chat"},
            },
        }
        if context is not None:  # the usage the model's provider reported (dsh's TokenUsage)
            data["usage"] = {
                "inputTokens": 180,
                "cacheReadTokens": context - 180,
                "outputTokens": 90,
            }
        return self._add(
            "assistant/message", data, surfaceOp=envelope.pop("op", "append"), **envelope
        )

    def chunks(self, text: str, turn: int = 1) -> None:
        for piece in text.split(" "):
            self._add(
                "assistant/chunk",
                {
                    "turn": turn,
                    "step": 1,
                    "chunk": {"type": "text-delta", "index": 0, "text": piece + " "},
                },
            )

    def tool(
        self, call_id: str, name: str, arguments: str, output: str, turn: int = 1
    ) -> tuple[int, int]:
        call = self._add(
            "tool/call",
            {"turn": turn, "step": 1, "callId": call_id, "name": name, "arguments": arguments},
        )
        result = self._add(
            "tool/result",
            self.result_data(call_id, output, turn),
            surfaceOp="append",
            sourceEventSeqs=[call],
        )
        return call, result

    def result_data(
        self, call_id: str, output: str, turn: int = 1, mid: str | None = None
    ) -> dict[str, Any]:
        return {
            "turn": turn,
            "step": 1,
            "message": {
                "id": mid or f"{self.sid}-result-{call_id}",
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

    def title(self, text: str, seqs: list[int]) -> None:
        self._add("session/title", {"title": text, "messageSeqs": seqs, "source": {"kind": "user"}})

    def take(self) -> list[dict[str, Any]]:
        """Events for sessionStore/append (the server assigns seqs)."""
        out = [{k: v for k, v in e.items() if k != "seq"} for e in self.events]
        self.events = []
        return out


def _header(sid: str, minutes: int, cwd: str | None, **extra: Any) -> dict[str, Any]:
    header: dict[str, Any] = {
        "version": 0,
        "id": sid,
        "createdAt": BASE_TIME + minutes * 60_000,
        **extra,
    }
    if cwd is not None:
        header["cwd"] = cwd
    return header


def populate(producer: Producer) -> dict[str, str]:
    """Build the corpus; returns a few ids worth showing (role → session id)."""
    api = DEMO_WORKSPACE
    web = "/home/ana/projects/web-console"

    # 1. A long live session with a compaction and a tool-result rewrite.
    main = _Log("fix-flaky-tests", BASE_TIME)
    producer.create(_header("fix-flaky-tests", 0, api, agentPreset="coder"))
    main.turn(1)
    first = main.user("The payment retry tests are flaky on CI. Find out why.")
    main.chunks("Let me run the suite a few times")
    ask = main.assistant(
        "Let me run the suite a few times.",
        tool=("call-1", "bash", '{"cmd":"pytest -x tests/retry"}'),
        context=14_200,
    )
    _, result = main.tool(
        "call-1",
        "bash",
        '{"cmd":"pytest -x tests/retry"}',
        "FAILED test_retry_backoff - timeout after 5s",
    )
    answer = main.assistant(
        "The backoff test sleeps on a real clock; it races the 5 s timeout.", context=18_600
    )
    main.end(1)
    main.title("Flaky payment retry tests", [first])
    main.turn(2)
    # The tool result is rewritten in place: only its content changes (a truncated log).
    rewrite = main._add(
        "tool/result",
        main.result_data("call-1", "[output truncated: 1 failure, timeout]"),
        surfaceOp={"op": "replace", "start": result, "end": result},
        sourceEventSeqs=[result],
    )
    # Compaction: the early exchange is replaced by one summary message.
    summary = main.user(
        "Summary so far: test_retry_backoff is flaky because it sleeps on a real clock.",
        op={"op": "replace", "start": first, "end": answer},
        sourceEventSeqs=[first, ask, rewrite, answer],
    )
    main.assistant(
        "I will inject a fake clock into RetryPolicy and make the test deterministic.",
        turn=2,
        context=4_100,
        sourceEventSeqs=[summary],
    )
    main.end(2)
    producer.append("fix-flaky-tests", main.take())
    producer.checkpoint("fix-flaky-tests")
    # More work after the checkpoint: the persisted copy now lags the live log.
    main.turn(3)
    main.user("Also check the refund path for the same problem.")
    main.assistant(
        "The refund path uses the same RetryPolicy; the fake clock fixes both.",
        turn=3,
        context=5_300,
    )
    main.end(3)
    producer.append("fix-flaky-tests", main.take())

    # 2. Sub-agents two levels deep under the main session.
    explorer = _Log("explore-retry-policy", BASE_TIME + 120_000)
    producer.create(
        _header(
            "explore-retry-policy",
            2,
            api,
            parentSession="fix-flaky-tests",
            origin="subagent",
            delegationDepth=1,
            agentPreset="explorer",
        )
    )
    explorer.turn(1)
    explorer.user("Map every caller of RetryPolicy.sleep.")
    explorer.tool(
        "call-7",
        "grep",
        '{"pattern":"RetryPolicy.sleep"}',
        "payments/retry.py:41\nrefunds/retry.py:18",
    )
    explorer.assistant("Two callers: payments/retry.py:41 and refunds/retry.py:18.")
    explorer.end(1)
    producer.append("explore-retry-policy", explorer.take())
    producer.checkpoint("explore-retry-policy")

    reader = _Log("read-refunds", BASE_TIME + 180_000)
    producer.create(
        _header(
            "read-refunds",
            3,
            api,
            parentSession="explore-retry-policy",
            origin="subagent",
            delegationDepth=2,
        )
    )
    reader.turn(1)
    reader.user("Read refunds/retry.py and report how it sleeps.")
    reader.assistant("It calls time.sleep(backoff) directly; no clock is injected.")
    reader.end(1, "max-tokens")
    producer.append("read-refunds", reader.take())

    # 3. A fork of the main session, seeded with its first exchange.
    fork = _Log("try-freezegun", BASE_TIME + 240_000)
    fork.user("The payment retry tests are flaky on CI. Find out why.")
    fork.assistant("Alternative: freeze time with freezegun instead of a fake clock.")
    seed = fork.events
    fork.events = []
    producer.create(
        _header("try-freezegun", 4, api, parentSession="fix-flaky-tests", seedLength=len(seed)),
        seed,
    )
    fork.time += 60_000
    fork.turn(1)
    fork.user("Try freezegun and compare the diff size.")
    fork.assistant("freezegun needs 3 lines per test; the fake clock needs 1. Keep the fake clock.")
    fork.end(1)
    producer.append("try-freezegun", fork.take())

    # 4. Another project: a session that ended with an error, checkpointed.
    css = _Log("dark-mode-contrast", BASE_TIME + 3_600_000)
    producer.create(_header("dark-mode-contrast", 60, web))
    css.turn(1)
    css.user("Raise the contrast of disabled buttons in dark mode.")
    css.tool(
        "call-2",
        "edit",
        '{"file":"theme.css"}',
        "edited theme.css: --disabled-fg #6b7280 -> #9ca3af",
    )
    css.assistant("Done: disabled text is now #9ca3af (contrast 4.6:1).")
    css.end(1)
    css.title("Dark mode contrast", [1])
    css.turn(2)
    css.user("Run the visual tests.")
    css._add(
        "turn/end",
        {
            "turn": 2,
            "reason": {
                "kind": "error",
                "error": {"message": "browser crashed", "code": "E_BROWSER"},
            },
        },
    )
    producer.append("dark-mode-contrast", css.take())
    producer.checkpoint("dark-mode-contrast")

    # 5. Persisted only: checkpointed, then its live owner went away.
    old = _Log("release-notes-2-4", BASE_TIME - 86_400_000)
    producer.create(_header("release-notes-2-4", -1440, web))
    old.turn(1)
    old.user("Draft the release notes for 2.4.")
    old.assistant("Release 2.4: dark mode, faster exports, and retry fixes.")
    old.end(1)
    producer.append("release-notes-2-4", old.take())
    producer.remove("release-notes-2-4")  # remove flushes pending events first

    # 6. A session with no cwd, live only.
    scratch = _Log("scratch", BASE_TIME + 7_200_000)
    producer.create(_header("scratch", 120, None))
    scratch.turn(1)
    scratch.user("What does HTTP 425 mean?")
    scratch.assistant(
        "425 Too Early: the server will not process a request that might be replayed."
    )
    scratch.end(1)
    producer.append("scratch", scratch.take())

    return {"main": "fix-flaky-tests", "compaction_seq": str(summary), "rewritten_seq": str(result)}


def serve_demo(config_options: dict[str, Any]) -> Callable[[Runtime], None]:
    """``dsh-query serve --demo``: the demo's persisted side lives in a private temporary store
    (without a named store that is also the store the server keeps mounted); returns the preload
    that fills it once the runtime is up."""
    import tempfile

    demo_store = "sqlite:" + os.path.join(tempfile.mkdtemp(prefix="dsh-query-demo-"), "sessions.db")
    config_options.setdefault("persistence", demo_store)
    config_options.setdefault("index", ":memory:")
    config_options.setdefault("checkpoint", {"mode": "manual"})

    def preload(runtime: Runtime) -> None:
        # The demo writes its persisted side only into its own store, so a named store is never
        # touched and restarting the demo always works; the named store is mounted back
        # afterwards (the demo's live sessions stay live).
        configured = runtime.binding.current()
        if configured is None or configured.backend.uri != demo_store:
            runtime.mount(demo_store)
        populate(RuntimeProducer(runtime))
        if configured is not None and configured.backend.uri != demo_store:
            runtime.binding.mount(configured.backend)

    return preload


class RuntimeProducer:
    """The demo's producer inside a server process (``dsh-query serve --demo``)."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    def create(self, header: dict[str, Any], seed: list[dict[str, Any]] | None = None) -> None:
        self.runtime.store.create(header, seed)

    def append(self, session_id: str, events: list[dict[str, Any]]) -> None:
        self.runtime.store.append(session_id, events)

    def checkpoint(self, session_id: str) -> None:
        self.runtime.checkpointer.flush(session_id)

    def remove(self, session_id: str) -> None:
        self.runtime.remove(session_id)


class RpcProducer:
    """The demo's producer over JSON-RPC."""

    def __init__(self, client: Client) -> None:
        self.client = client

    def create(self, header: dict[str, Any], seed: list[dict[str, Any]] | None = None) -> None:
        params: dict[str, Any] = {"header": header}
        if seed is not None:
            params["seed"] = seed
        self.client.request("sessionStore/create", params)

    def append(self, session_id: str, events: list[dict[str, Any]]) -> None:
        self.client.request("sessionStore/append", {"sessionId": session_id, "events": events})

    def checkpoint(self, session_id: str) -> None:
        self.client.request("sessionStore/checkpoint", {"sessionId": session_id})

    def remove(self, session_id: str) -> None:
        self.client.request("sessionStore/remove", {"sessionId": session_id})


def cmd_demo(args: argparse.Namespace) -> None:
    """Build the demo corpus under a temporary embedded default and show what the service sees."""
    from rich.console import Console

    console = Console()
    import tempfile

    with tempfile.TemporaryDirectory(prefix="dsh-query-demo-") as home:
        env = {
            **os.environ,
            "XDG_STATE_HOME": os.path.join(home, "state"),
            "XDG_CACHE_HOME": os.path.join(home, "cache"),
        }
        # The embedded store alone, inside the temporary state dir: never a user's sessions.
        args.persistence = ["sqlite:" + os.path.join(home, "state", "dsh-query", "sessions.db")]
        with connect(
            args, env=env, private=True, checkpoint={"mode": "manual"}, index=":memory:"
        ) as client:
            with console.status("building the demo corpus through sessionStore/*…"):
                ids = populate(RpcProducer(client))
            status = client.request("sessionPersistence/status")
            console.rule("[bold]dsh-query demo")
            console.print(
                f"persistence: [bold]{safe(status['uri'])}[/bold] "
                f"({status['pendingEvents']} live events not yet checkpointed)"
            )
            show_sessions(client, False, page=False)
            console.print(
                "[dim]fix-flaky-tests is live and persisted, and its persisted copy lags: "
                "turn 3 was appended after the last checkpoint.[/dim]\n"
            )
            show_events(client, ids["main"], False, page=False)
            show_lineage(client, ids["main"], False)
            show_event_trace(client, ids["main"], int(ids["rewritten_seq"]), False)
            hits = client.request(
                "sessionQuery/searchSessions", {"query": "fake clock", "limit": 5}
            )
            console.print(
                '\nsearch "fake clock": '
                + ", ".join(f"{h['header']['id']}#{h['bestMatch']['seq']}" for h in hits["items"])
            )
            # What the model saw in the compaction session: its chart, its surface, its page.
            from .demo_views import show_views

            show_views(client, ids["main"], console)


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    sub.add_parser(
        "demo", parents=[common], help="build a demo corpus and show what the service sees"
    ).set_defaults(func=cmd_demo)
