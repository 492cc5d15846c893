"""``session_usage`` (tools.md §1.6): one session's tokens and cost (usage.md §1), and with
``include_descendants`` those of its descendants that are in the caller's workspace.

The service's own ``includeDescendants`` walks every descendant, visible or not, so the tool
walks the lineage itself, as ``session_trace`` does: an invisible descendant is left out with its
subtree, and no hidden id reaches the answer.
"""

from __future__ import annotations

from typing import Any

from ..jsoncodec import to_builtins
from ..model.usage import SessionUsage, UsageTotals
from ..query import lineage
from ..query.loaded import Record
from ..query.tally import sum_totals
from . import search_tool
from .args import ToolError
from .tools import UNAUTHORIZED, Call, Result


def _counts(total: UsageTotals) -> str:
    parts = []
    for key, label in (
        ("input", "input"),
        ("cacheRead", "cache read"),
        ("cacheWrite", "cache write"),
        ("output", "output"),
        ("reasoning", "reasoning"),
    ):
        value = getattr(total, key)
        parts.append(f"{label} {'not recorded' if value is None else value}")
    return ", ".join(parts)


def _cost(total: UsageTotals) -> str:
    if total.costUsd is None:
        text = "no price"
    else:
        text = f"${total.costUsd} (an estimate at list prices)"
    if total.unpricedResponses:
        models = ", ".join(total.unpricedModels)
        text += f"; {total.unpricedResponses} responses without a price ({models})"
    return text


def _lines(label: str, total: UsageTotals) -> list[str]:
    return [
        f"{label}: {total.responses} responses in {total.sessions} sessions",
        f"Tokens: {_counts(total)}",
        f"Cost: {_cost(total)}",
        f"Models: {', '.join(total.models) or 'none'}",
    ]


def session_usage(call: Call, a: dict[str, Any]) -> Result:
    target = call.target(a)
    call.authorize(target)
    service = call.runtime.service
    usage: SessionUsage = call.svc(
        "sessionQuery/readUsage", lambda: service.read_usage(target, False, call.token)
    )
    call.recheck(usage.session, target)
    text, title = call.titles([target])[target]
    lines = [f"Session {target} — {text}", *_lines("Counted", usage.total)]
    if usage.seedResponses:
        lines.append(f"Seed: {usage.seedResponses} responses copied from the parent, not counted")
    peak = usage.peakContext
    lines.append(
        "Peak context: none recorded"
        if peak is None
        else f"Peak context: {peak.context} tokens at seq {peak.seq}"
    )
    lines.append(f"Prices: {usage.prices}")
    structured: dict[str, Any] = {
        "sessionId": target,
        **title,
        "agent": usage.agent,
        "seedResponses": usage.seedResponses,
        "peakContext": to_builtins(peak),
        "total": to_builtins(usage.total),
        "prices": usage.prices,
    }
    if a.get("include_descendants") is True:
        descendants, unavailable = _descendants(call, target)
        whole = sum_totals([usage.total, *(u.total for _, u in descendants)])
        lines += ["", "Descendants:"]
        lines += [
            f"- {r.header.id} | {u.agent} | {u.total.responses} responses | {_cost(u.total)}"
            for r, u in descendants
        ] or ["- none"]
        lines += [f"- {sid} | unavailable: {code}" for sid, code in unavailable]
        lines += ["", *_lines("With descendants", whole)]
        structured["descendants"] = [
            {"sessionId": r.header.id, "agent": u.agent, "total": to_builtins(u.total)}
            for r, u in descendants
        ] + [{"sessionId": sid, "unavailable": code} for sid, code in unavailable]
        structured["withDescendants"] = to_builtins(whole)
    return Result("\n".join(lines), structured)


def _descendants(
    call: Call, target: str
) -> tuple[list[tuple[Record, SessionUsage]], list[tuple[str, str]]]:
    """The visible descendants in preorder, each read once, and those that could not be read
    (id, sanitized code); an invisible one drops its subtree."""
    service = call.runtime.service
    records: list[Record] = call.svc(
        "sessionQuery/listSessions", lambda: service.corpus(call.token)
    )
    groups = lineage.children_index(records)
    out: list[tuple[Record, SessionUsage]] = []
    unavailable: list[tuple[str, str]] = []
    seen = {target}
    stack = list(reversed(groups.get(target, [])))
    while stack:
        record = stack.pop()
        sid = record.header.id
        if sid in seen or not call.workspace.visible(record.header.cwd):
            continue
        seen.add(sid)
        stack.extend(reversed(groups.get(sid, [])))
        try:
            usage: SessionUsage = call.svc(
                "sessionQuery/readUsage",
                lambda sid=sid: service.read_usage(sid, False, call.token),
            )
        except ToolError as exc:
            if exc.code == UNAUTHORIZED:
                raise
            unavailable.append((sid, exc.code))
            continue
        call.recheck(usage.session, sid)
        out.append((record, usage))
    return out, unavailable


# Every tool: session_search's table (search_tool.py) and this one.
RUN = {**search_tool.RUN, "session_usage": session_usage}
