"""readUsage and usageSummary (usage.md): one hand-made home per counting rule, read by the real
importers through the query service, and the prices of usage.md §3."""

from __future__ import annotations

import json
import pathlib
from decimal import Decimal
from typing import Any

import pytest

from dsh_query_server import errors
from dsh_query_server.errors import QueryError
from dsh_query_server.jsoncodec import to_builtins
from dsh_query_server.persistence.claude.backend import ClaudeBackend
from dsh_query_server.persistence.codex.backend import CodexBackend
from dsh_query_server.persistence.mount.binding import PersistenceBinding
from dsh_query_server.query.service import SessionQueryService
from dsh_query_server.session.store import SessionStore
from tests.import_helpers import jl, write_home
from tests.persistence.claude.test_import_claude_rules import asst, text, user
from tests.persistence.codex.test_import_codex import SID as CODEX_SID
from tests.persistence.codex.test_import_codex import event, item, meta, msg

TRUNK = "0b0b0b0b-0000-4000-8000-000000000001"
FORK = "0b0b0b0b-0000-4000-8000-000000000002"
SONNET = "claude-sonnet-4-5"


def service_over(backend: Any, prices: str | None = None) -> SessionQueryService:
    binding = PersistenceBinding()
    binding.mount(backend)
    return SessionQueryService(SessionStore(), binding, prices=prices)


def claude_home(tmp: pathlib.Path, files: dict[str, bytes]) -> SessionQueryService:
    root = tmp / "claude"
    write_home(root, {f"projects/-w/{name}": body for name, body in files.items()})
    return service_over(ClaudeBackend(str(root), f"claude:{root}"))


def response(
    uuid: str,
    parent: str | None,
    mid: str,
    n: int,
    usage: dict[str, Any] | None,
    *,
    model: str = SONNET,
    sid: str = TRUNK,
    request: str | None = None,
    **kw: Any,
) -> dict[str, Any]:
    record = asst(uuid, parent, mid, [text(f"answer {uuid}")], n, sid=sid, **kw)
    record["message"]["model"] = model
    if usage is not None:
        record["message"]["usage"] = usage
    record["requestId"] = request or f"req-{mid}"
    return record


def anthropic(input: int, output: int, read: int | None = None, write: int | None = None):
    usage: dict[str, Any] = {"input_tokens": input, "output_tokens": output}
    if read is not None:
        usage["cache_read_input_tokens"] = read
    if write is not None:
        usage["cache_creation_input_tokens"] = write
    return usage


def usage_of(service: SessionQueryService, sid: str, descendants: bool = False) -> dict[str, Any]:
    return to_builtins(service.read_usage(sid, descendants))


def summary_of(service: SessionQueryService, group_by: str, **kw: Any) -> dict[str, Any]:
    return to_builtins(service.usage_summary([], group_by, **kw))


# The worked example of usage.md §2.1: one response written as two records, then another.
DUPLICATES = jl(
    user("u1", None, "read a", 1, sid=TRUNK),
    response("a1", "u1", "msg_1", 2, anthropic(3, 5, read=900, write=100)),
    response("a2", "a1", "msg_1", 3, anthropic(3, 40, read=900, write=100)),
    response("a3", "a2", "msg_2", 5, anthropic(1, 7, read=1000)),
)


def test_one_response_counts_once_from_its_last_record(tmp_path):
    service = claude_home(tmp_path, {f"{TRUNK}.jsonl": DUPLICATES})
    got = usage_of(service, TRUNK)
    assert [(s["seq"], s["output"], s["costUsd"]) for s in got["steps"]] == [
        (got["steps"][0]["seq"], 40, "0.001254"),
        (got["steps"][1]["seq"], 7, "0.000408"),
    ]
    assert got["total"] == {
        "sessions": 1,
        "responses": 2,
        "input": 4,
        "cacheRead": 1900,
        "cacheWrite": 100,  # msg_2 recorded none: it adds nothing, and the sum is not null
        "output": 47,
        "reasoning": None,  # Anthropic never counts it apart: null, not 0
        "costUsd": "0.001662",
        "unpricedResponses": 0,
        "unpricedModels": [],
        "models": [SONNET],
    }
    assert got["steps"][0]["priceSource"] == "genai-prices 0.2.3 anthropic/claude-sonnet-4-5"
    assert got["peakContext"] == {"seq": got["steps"][0]["seq"], "context": 1003}
    assert got["agent"] == "claude-code" and got["seedResponses"] == 0
    assert summary_of(service, "day")["rows"] == [
        {
            "key": "2026-01-01",
            "total": got["total"],
            "byModel": [{"model": SONNET, "total": got["total"]}],
        }
    ]


def test_an_unknown_model_shows_its_tokens_and_no_price(tmp_path):
    lines = jl(
        user("u1", None, "hi", 1, sid=TRUNK),
        response("a1", "u1", "msg_1", 2, anthropic(10, 2), model="house-model-7"),
        response("a2", "a1", "msg_2", 3, anthropic(5, 1)),
    )
    got = usage_of(claude_home(tmp_path, {f"{TRUNK}.jsonl": lines}), TRUNK)
    assert [s["costUsd"] for s in got["steps"]] == [None, "0.00003"]
    total = got["total"]
    assert (total["input"], total["output"]) == (15, 3)
    # the priced part is a sum of what has a price; the rest is said, never 0 USD
    assert (total["costUsd"], total["unpricedResponses"]) == ("0.00003", 1)
    assert total["unpricedModels"] == ["house-model-7"]


def test_a_response_without_usage_or_with_broken_counts(tmp_path):
    lines = jl(
        user("u1", None, "hi", 1, sid=TRUNK),
        response("a1", "u1", "msg_1", 2, None),  # no usage: not a counted response
        response("a2", "a1", "msg_2", 3, {"input_tokens": "3", "output_tokens": 4}),
    )
    got = usage_of(claude_home(tmp_path, {f"{TRUNK}.jsonl": lines}), TRUNK)
    [step] = got["steps"]
    # a count that is no integer is null; without its prompt the response has no price
    assert (step["input"], step["output"], step["context"], step["costUsd"]) == (
        None,
        4,
        None,
        None,
    )
    assert got["total"]["input"] is None and got["total"]["unpricedResponses"] == 1
    assert got["peakContext"] is None


def test_a_forks_seed_counts_for_its_parent_only(tmp_path):
    parent = [
        user("u1", None, "one", 1, sid=TRUNK),
        response("a1", "u1", "msg_1", 2, anthropic(100, 10)),
    ]
    # Claude Code copies the parent's records, with the parent's sessionId, into the fork
    own = [
        user("u2", "a1", "two", 10, sid=FORK),
        response("a2", "u2", "msg_2", 11, anthropic(200, 20), sid=FORK),
    ]
    service = claude_home(
        tmp_path, {f"{TRUNK}.jsonl": jl(*parent), f"{FORK}.jsonl": jl(*parent, *own)}
    )
    fork = usage_of(service, FORK)
    assert (fork["seedResponses"], fork["total"]["responses"], fork["total"]["input"]) == (
        1,
        1,
        200,
    )
    total = summary_of(service, "session")["total"]
    assert (total["responses"], total["input"], total["output"]) == (2, 300, 30)


def test_a_fork_without_history_of_its_own_is_all_seed(tmp_path):
    parent = [
        user("u1", None, "one", 1, sid=TRUNK),
        response("a1", "u1", "msg_1", 2, anthropic(100, 10)),
    ]
    service = claude_home(tmp_path, {f"{TRUNK}.jsonl": jl(*parent), f"{FORK}.jsonl": jl(*parent)})
    fork = usage_of(service, FORK)
    assert (fork["seedResponses"], fork["total"]["responses"]) == (1, 0)
    assert summary_of(service, "day")["total"]["responses"] == 1


def test_a_sub_agent_counts_once_in_its_own_session(tmp_path):
    trunk = jl(
        user("u1", None, "delegate", 1, sid=TRUNK),
        response("a1", "u1", "msg_1", 2, anthropic(10, 1)),
        # the same agent's records written inline in the trunk (older Claude Code) are opaque
        response("x1", "a1", "msg_9", 3, anthropic(7, 7), isSidechain=True),
    )
    agent = jl(
        user("s1", None, "sub task", 3, sid=TRUNK, isSidechain=True),
        response("x1", "s1", "msg_9", 4, anthropic(7, 7), isSidechain=True),
    )
    service = claude_home(
        tmp_path,
        {f"{TRUNK}.jsonl": trunk, f"{TRUNK}/subagents/agent-ab12.jsonl": agent},
    )
    alone = usage_of(service, TRUNK)
    assert alone["total"]["responses"] == 1
    whole = usage_of(service, TRUNK, descendants=True)
    [child] = whole["descendants"]
    assert (child["sessionId"], child["parentSession"]) == (f"{TRUNK}/agent-ab12", TRUNK)
    assert child["total"]["input"] == 7
    assert (whole["withDescendants"]["responses"], whole["withDescendants"]["input"]) == (2, 17)
    assert whole["withDescendants"]["sessions"] == 2 and whole["skipped"] == []
    total = summary_of(service, "agent")["total"]
    assert (total["responses"], total["input"]) == (2, 17)


def codex_service(tmp: pathlib.Path, *records: Any) -> SessionQueryService:
    write_home(tmp / "codex", {f"sessions/2026/01/01/rollout-x-{CODEX_SID}.jsonl": jl(*records)})
    return service_over(CodexBackend(str(tmp / "codex"), "codex:x"))


def token_count(last: dict[str, int], total: dict[str, int]) -> dict[str, Any]:
    info = {"last_token_usage": last, "total_token_usage": total}
    return event({"type": "token_count", "info": info})


def test_codex_counts_last_token_usage_once_per_response(tmp_path):
    context = {"timestamp": "2026-01-01T00:00:00.500Z", "type": "turn_context"}
    first = {"input_tokens": 1200, "cached_input_tokens": 1000, "output_tokens": 50}
    second = {"input_tokens": 1300, "cached_input_tokens": 1200, "output_tokens": 5}
    service = codex_service(
        tmp_path,
        meta(CODEX_SID),
        {**context, "payload": {"model": "gpt-5"}},
        item(msg("user", "list files")),
        item(msg("assistant", "a and b")),
        token_count(first, first),
        token_count(first, first),  # restated (a resumed rollout): no request of its own
        item(msg("user", "more")),
        item(msg("assistant", "c")),
        token_count(second, {k: first[k] + second[k] for k in first}),
    )
    got = usage_of(service, CODEX_SID)
    # OpenAI's input includes the cached part: usage.md's input is the uncached rest
    assert [(s["input"], s["cacheRead"], s["context"]) for s in got["steps"]] == [
        (200, 1000, 1200),
        (100, 1200, 1300),
    ]
    assert got["steps"][0]["costUsd"] == "0.000875"  # 200 × 1.25 + 1000 × 0.125 + 50 × 10
    assert got["total"]["responses"] == 2 and got["total"]["cacheWrite"] is None


# -- prices (usage.md §3) -------------------------------------------------------------------


def test_a_long_prompt_takes_the_long_context_tier(tmp_path):
    lines = jl(
        user("u1", None, "big", 1, sid=TRUNK),
        response("a1", "u1", "msg_1", 2, anthropic(10, 100, read=250_000)),
    )
    [step] = usage_of(claude_home(tmp_path, {f"{TRUNK}.jsonl": lines}), TRUNK)["steps"]
    # past 200,000 prompt tokens every part of the request takes the tier's rate (genai-prices)
    assert (
        Decimal(step["costUsd"])
        == (Decimal(10) * 6 + Decimal(250_000) * Decimal("0.6") + Decimal(100) * Decimal("22.5"))
        / 1_000_000
    )


def test_prices_are_those_of_the_responses_date(tmp_path):
    def at(day: str) -> dict[str, Any]:
        return {**event({"type": "x"}), "timestamp": f"{day}T00:00:01.000Z"}

    usage = {"input_tokens": 1000, "output_tokens": 1000}
    service = codex_service(
        tmp_path,
        meta(CODEX_SID),
        {
            "timestamp": "2025-06-01T00:00:00.000Z",
            "type": "turn_context",
            "payload": {"model": "o3"},
        },
        {**item(msg("assistant", "before")), "timestamp": "2025-06-01T00:00:01.000Z"},
        {**token_count(usage, usage), "timestamp": "2025-06-01T00:00:02.000Z"},
        {**item(msg("assistant", "after")), "timestamp": "2025-06-11T00:00:01.000Z"},
        {**token_count(usage, {"input_tokens": 2000}), "timestamp": "2025-06-11T00:00:02.000Z"},
        at("2025-06-12"),
    )
    steps = usage_of(service, CODEX_SID)["steps"]
    # o3's price fell on 2025-06-10 from $10/$40 to $2/$8 per million
    assert [s["costUsd"] for s in steps] == ["0.05", "0.01"]


def prices_file(tmp: pathlib.Path, entries: list[dict[str, Any]]) -> str:
    path = tmp / "prices.json"
    path.write_text(json.dumps({"prices": entries}))
    return str(path)


def test_a_prices_file_overrides_the_models_it_lists(tmp_path):
    lines = jl(
        user("u1", None, "hi", 1, sid=TRUNK),
        response("a1", "u1", "msg_1", 2, anthropic(1000, 100, read=5000), model="house-model"),
        response("a2", "a1", "msg_2", 3, anthropic(1000, 100), model="house-model"),
        response("a3", "a2", "msg_3", 4, anthropic(1000, 100)),
    )
    root = tmp_path / "claude"
    write_home(root, {f"projects/-w/{TRUNK}.jsonl": lines})
    path = prices_file(
        tmp_path,
        [
            {"model": "house-model", "input": 2, "output": "8", "cacheRead": 0.5},
            {
                "model": "house-model",
                "since": "2026-01-01",
                "input": 1,
                "output": 4,
                "tiers": [{"above": 5000, "input": 3, "output": 9}],
            },
        ],
    )
    service = service_over(ClaudeBackend(str(root), f"claude:{root}"), prices=path)
    got = usage_of(service, TRUNK)
    costs = [s["costUsd"] for s in got["steps"]]
    # a1: prompt 6,000 > 5,000: the tier's input and output; no tier rate for cache reads, so the
    # base one (none in the dated entry: reads are billed as input, at the tier's 3)
    assert costs[0] == str((Decimal(6000) * 3 + Decimal(100) * 9) / 1_000_000)
    assert costs[1] == str((Decimal(1000) * 1 + Decimal(100) * 4) / 1_000_000)
    assert costs[2] == "0.0045"  # not in the file: genai-prices (1000 × 3 + 100 × 15)
    assert got["steps"][0]["priceSource"] == f"prices file {path}: house-model since 2026-01-01"
    assert got["prices"] == f"prices file {path}, then genai-prices 0.2.3"


@pytest.mark.parametrize(
    "document, message",
    [
        ("not json", "not JSON"),
        ('{"prices": {}}', 'it must be an object with a "prices" array'),
        ('{"prices": [{"model": ""}]}', "prices[0].model must be a non-empty string"),
        ('{"prices": [{"model": "m", "input": -1}]}', "prices[0].input must be a finite number"),
        ('{"prices": [{"model": "m", "since": "soon"}]}', "prices[0].since must be a date"),
        (
            '{"prices": [{"model": "m", "tiers": [{"above": 9}, {"above": 1}]}]}',
            "prices[0].tiers must be in ascending order of above",
        ),
    ],
)
def test_a_bad_prices_file_is_invalid_config(tmp_path, document, message):
    from dsh_query_server.core.config import build_config

    path = tmp_path / "p.json"
    path.write_text(document)
    with pytest.raises(QueryError) as exc:
        build_config({"persistence": None, "prices": str(path)})
    assert exc.value.code == errors.INVALID_CONFIG
    assert message in exc.value.message


# -- usageSummary (usage.md §4) -------------------------------------------------------------


def test_days_are_those_of_the_time_zone_and_bounds_are_half_open(tmp_path):
    lines = jl(
        user("u1", None, "late", 1, sid=TRUNK),
        {**response("a1", "u1", "msg_1", 2, anthropic(1, 1)), "timestamp": "2026-01-01T23:30:00Z"},
        {**response("a2", "a1", "msg_2", 3, anthropic(2, 2)), "timestamp": "2026-01-02T08:00:00Z"},
    )
    service = claude_home(tmp_path, {f"{TRUNK}.jsonl": lines})
    utc = summary_of(service, "day")
    assert [(r["key"], r["total"]["input"]) for r in utc["rows"]] == [
        ("2026-01-01", 1),
        ("2026-01-02", 2),
    ]
    paris = summary_of(service, "day", time_zone="Europe/Paris")
    assert [(r["key"], r["total"]["input"]) for r in paris["rows"]] == [("2026-01-02", 3)]
    assert [r["key"] for r in summary_of(service, "week")["rows"]] == ["2026-W01"]
    assert [r["key"] for r in summary_of(service, "month")["rows"]] == ["2026-01"]
    cut = 1767312000000  # 2026-01-02T00:00:00Z
    assert summary_of(service, "day", until=cut)["total"]["input"] == 1
    assert summary_of(service, "day", since=cut)["total"]["input"] == 2


def test_session_filters_choose_the_sessions(tmp_path):
    service = claude_home(tmp_path, {f"{TRUNK}.jsonl": DUPLICATES})
    got = to_builtins(service.usage_summary([{"kind": "cwd", "values": ["/elsewhere"]}], "cwd"))
    assert got["rows"] == [] and got["total"]["responses"] == 0
    assert got["total"]["costUsd"] is None  # nothing priced: no price, not 0 USD
    with pytest.raises(QueryError) as exc:
        service.usage_summary([{"kind": "nope"}], "day")
    assert exc.value.code == errors.INVALID_FILTER
