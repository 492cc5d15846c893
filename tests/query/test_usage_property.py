"""usage.md §4's invariant on random corpora: for every groupBy, the rows add up to the summary's
total, and the total is the sum of every session's readUsage total; and every price is the one
``genai-prices`` itself computes (usage.md §3.1)."""

from __future__ import annotations

import warnings
from decimal import Decimal
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_query_server.jsoncodec import to_builtins
from dsh_query_server.persistence.mount.binding import PersistenceBinding
from dsh_query_server.query.prices import PriceTable
from dsh_query_server.query.service import SessionQueryService
from dsh_query_server.query.usage_service import GROUPS
from dsh_query_server.session.store import SessionStore
from tests.builders import assistant_data, ev, user_data
from tests.fakes import MemoryBackend

MODELS = ["claude-sonnet-4-5", "gpt-5", "o3", "house-model", None]
DAY = 86_400_000
START = 1_748_736_000_000  # 2025-06-01T00:00:00Z: o3's price changes within the range
COUNTS = ("input", "cacheRead", "cacheWrite", "output", "reasoning")

counts = st.none() | st.integers(0, 300_000)


@st.composite
def sessions(draw: Any) -> list[tuple[dict[str, Any], list[Any]]]:
    out: list[tuple[dict[str, Any], list[Any]]] = []
    for i in range(draw(st.integers(1, 5))):
        header: dict[str, Any] = {"version": 0, "id": f"s{i}", "createdAt": START + i}
        header["cwd"] = draw(st.sampled_from(["/a", "/b"]))
        if out and draw(st.booleans()):
            header["parentSession"] = draw(st.sampled_from([h["id"] for h, _ in out]))
        events: list[Any] = []
        for _ in range(draw(st.integers(0, 6))):
            seq = len(events)
            time = START + draw(st.integers(0, 40 * DAY))
            if draw(st.booleans()):
                events.append(ev("user/message", seq, user_data(), op="append", time=time))
                continue
            data = assistant_data()
            data["message"]["source"]["model"] = draw(st.sampled_from(MODELS))
            usage = {
                key: value
                for key in ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens")
                if (value := draw(counts)) is not None
            }
            if usage or draw(st.booleans()):
                data["usage"] = usage
            events.append(ev("assistant/message", seq, data, op="append", time=time))
        if events and draw(st.booleans()):  # a seed: the events before its end-seed
            k = draw(st.integers(0, len(events)))
            header["seedLength"] = k
            events.insert(k, ev("session/end-seed", k, time=START))
            events = [ev_at(e, seq) for seq, e in enumerate(events)]
        out.append((header, events))
    return out


def ev_at(event: Any, seq: int) -> Any:
    value = event.to_value()
    value["seq"] = seq
    return type(event).from_value(value)


def service_of(corpus: list[tuple[dict[str, Any], list[Any]]]) -> SessionQueryService:
    backend = MemoryBackend()
    for header, events in corpus:
        backend.put(header, events)
    binding = PersistenceBinding()
    binding.mount(backend)
    return SessionQueryService(SessionStore(), binding)


def add(totals: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"responses": 0, "unpricedResponses": 0, "cost": None}
    for key in COUNTS:
        values = [t[key] for t in totals if t[key] is not None]
        out[key] = sum(values) if values else None
    for t in totals:
        out["responses"] += t["responses"]
        out["unpricedResponses"] += t["unpricedResponses"]
        if t["costUsd"] is not None:
            cost = Decimal(t["costUsd"])
            out["cost"] = cost if out["cost"] is None else out["cost"] + cost
    return out


def same(total: dict[str, Any]) -> dict[str, Any]:
    cost = total["costUsd"]
    out = {key: total[key] for key in (*COUNTS, "responses", "unpricedResponses")}
    return {**out, "cost": None if cost is None else Decimal(cost)}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sessions(), st.sampled_from(["UTC", "Pacific/Auckland"]))
def test_summary_totals_are_the_sum_of_every_sessions_read_usage(corpus, zone):
    service = service_of(corpus)
    per_session = [to_builtins(service.read_usage(h["id"]))["total"] for h, _ in corpus]
    expected = add(per_session)
    sessions_counted = sum(t["sessions"] for t in per_session)
    for group in GROUPS:
        summary = to_builtins(service.usage_summary([], group, time_zone=zone))
        total = summary["total"]
        assert same(total) == expected, group
        assert total["sessions"] == sessions_counted
        assert add([row["total"] for row in summary["rows"]]) == expected, group
        keys = [row["key"] for row in summary["rows"]]
        assert len(keys) == len(set(keys))
        for row in summary["rows"]:
            if group in ("day", "week", "month"):  # a time row's models add up to it
                assert add([s["total"] for s in row["byModel"]]) == same(row["total"])
            else:
                assert "byModel" not in row
    whole = to_builtins(service.read_usage(corpus[0][0]["id"], True))["withDescendants"]
    assert whole["responses"] >= per_session[0]["responses"]


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(["claude-sonnet-4-5", "claude-opus-4-5", "gpt-5", "o3", "gemini-2.5-pro"]),
    st.integers(0, 400_000),
    st.integers(0, 200_000),
    st.integers(0, 200_000),
    st.integers(0, 100_000),
    st.integers(START, START + 400 * DAY),
)
def test_a_price_is_the_one_genai_prices_computes(model, plain, read, write, output, time):
    from genai_prices import Usage, calc_price

    from dsh_query_server.query.prices import utc

    table = PriceTable()
    found = table.price(None, model, time)
    assert found is not None
    prompt = plain + read + (write if found.rates.cache_write is not None else 0)
    if found.rates.cache_write is None:
        write = 0  # a model without cache-write prices: none are reported for it
    ours = found.rates.cost(prompt, read, write, output)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = calc_price(
            Usage(
                input_tokens=prompt,
                cache_read_tokens=read,
                cache_write_tokens=write,
                output_tokens=output,
            ),
            model,
            genai_request_timestamp=utc(time),
        ).total_price
    assert ours == theirs


def test_a_summary_reads_again_only_the_logs_whose_revision_changed():
    def one(sid: str, tokens: int) -> tuple[dict[str, Any], list[Any]]:
        data = assistant_data()
        data["message"]["source"]["model"] = "gpt-5"
        data["usage"] = {"inputTokens": tokens, "outputTokens": 1}
        return {"version": 0, "id": sid, "createdAt": START}, [
            ev("assistant/message", 0, data, op="append", time=START)
        ]

    backend = MemoryBackend()
    for sid, tokens in (("a", 10), ("b", 20)):
        backend.put(*one(sid, tokens))
    binding = PersistenceBinding()
    binding.mount(backend)
    service = SessionQueryService(SessionStore(), binding)

    def inspected() -> list[Any]:
        return [arg for op, arg in backend.calls if op.startswith("inspect")]

    assert to_builtins(service.usage_summary([], "day"))["total"]["input"] == 30
    assert sorted(inspected()) == ["a", "b"]
    assert to_builtins(service.usage_summary([], "model"))["total"]["input"] == 30
    assert sorted(inspected()) == ["a", "b"]  # both revisions unchanged: nothing read again
    backend.put(*one("b", 25))  # the stored log changes, and with it its revision
    assert to_builtins(service.usage_summary([], "day"))["total"]["input"] == 35
    assert sorted(inspected()) == ["a", "b", "b"]
