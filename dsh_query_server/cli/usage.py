"""``dsh-query usage``: tokens and cost by day, week, month, model, agent, project or session
(``sessionQuery/usageSummary``), or one session's responses (``sessionQuery/readUsage``),
usage.md §5.

A table fits 80 columns: counts are shown compactly (``527.0k``, exact in ``--json``), a count
never recorded is ``-`` (never 0), a cost without a price is ``no price``, and a bar shows each
row's share of the largest row's tokens. Colour repeats what the words and numbers say.
"""

from __future__ import annotations

import argparse
import os
from decimal import Decimal
from typing import Any

from .filters import since_ms
from .opening import open_client
from .render import Listing, listing, print_json, safe, when

GROUPS = {
    "day": "day",
    "week": "week",
    "month": "month",
    "model": "model",
    "agent": "agent",
    "project": "cwd",
    "session": "session",
}
BAR = 10
KEY = 17
COUNTS = ("input", "cacheRead", "cacheWrite", "output")
HEADS = ("input", "cache rd", "cache wr", "output")


def compact(n: Any) -> str:
    """A count in at most 7 characters; ``-`` for one never recorded."""
    if not isinstance(n, int):
        return "-"
    if n < 10_000:
        return str(n)
    for size, unit in ((1_000_000_000, "G"), (1_000_000, "M"), (1_000, "k")):
        if n >= size:
            return f"{n / size:.1f}{unit}"
    return str(n)


def dollars(total: dict[str, Any]) -> tuple[str, str]:
    """(text, style) of a total's cost: the priced sum, marked when some responses have none."""
    cost, unpriced = total.get("costUsd"), total.get("unpricedResponses", 0)
    if cost is None:
        return ("no price" if unpriced else "-"), "yellow" if unpriced else "dim"
    value = Decimal(cost)
    text = f"${value:,.2f}" if value >= 1 else f"${value:.4f}".rstrip("0").rstrip(".")
    if text == "$0":
        text = "<$0.0001" if value > 0 else "$0"
    return (text + "*" if unpriced else text), "green"


def tokens(total: dict[str, Any]) -> int:
    return sum(total.get(k) or 0 for k in COUNTS)


def _cut(text: str, width: int) -> str:
    """The end of a long key (a path's last folders, an id's tail) is the telling part."""
    return text if len(text) <= width else "…" + text[-(width - 1) :]


def local_zone() -> str:
    """The local IANA zone (``TZ``, else /etc/localtime's link), else UTC."""
    zone = os.environ.get("TZ", "").lstrip(":")
    if zone and "/" in zone and not zone.startswith("/"):
        return zone
    try:
        target = os.readlink("/etc/localtime")
    except OSError:
        return "UTC"
    marker = "zoneinfo/"
    return target.split(marker, 1)[1] if marker in target else "UTC"


def _key_text(group: str, key: Any, listed: Listing | None) -> str:
    if key is None:
        return "(none)"
    if group == "cwd":
        home = os.path.expanduser("~")
        key = "~" + key[len(home) :] if key == home or key.startswith(home + "/") else key
    if group == "session" and listed is not None:
        key = listed.short(key)
    return _cut(str(key), KEY)


def _row(console: Any, key: str, total: dict[str, Any], largest: int, style: str = "") -> None:
    from rich.text import Text

    line = Text(f"{key:<{KEY}}", style=style)
    line.append(f"{total['responses']:>6}")
    for k in COUNTS:
        line.append(f"{compact(total.get(k)):>9}")
    cost, cost_style = dollars(total)
    line.append(f"{cost:>10} ", style=cost_style)
    if largest:  # a total row has none: it is every row's whole
        filled = round(BAR * tokens(total) / largest)
        line.append("█" * filled, style="cyan")
        line.append("·" * (BAR - filled), style="dim")
    console.print(line, soft_wrap=True, highlight=False)


def _header(console: Any, first: str) -> None:
    heads = "".join(f"{h:>9}" for h in HEADS)
    console.print(
        f"[bold]{first:<{KEY}}{'resp':>6}{heads}{'cost':>10} {'tokens':<{BAR}}[/bold]",
        highlight=False,
    )


def _footnotes(console: Any, total: dict[str, Any], prices: str) -> None:
    if total.get("unpricedResponses"):
        models = ", ".join(safe(m) for m in total.get("unpricedModels", []))
        console.print(
            f"[yellow]*[/yellow] {total['unpricedResponses']} responses have no price "
            f"({models}): their tokens are counted, their cost is not",
            highlight=False,
        )
    console.print(
        f"[dim]cost: an estimate at list prices ({safe(prices)}); - = not recorded[/dim]",
        highlight=False,
    )


def show_summary(client: Any, args: argparse.Namespace) -> None:
    from . import style

    group = GROUPS[args.by]
    params: dict[str, Any] = {"groupBy": group, "timeZone": args.tz or local_zone()}
    if args.since is not None:
        params["since"] = args.since
    if args.until is not None:
        params["until"] = args.until
    summary = client.request("sessionQuery/usageSummary", params)
    if args.json:
        return print_json(summary)
    listed = listing(client) if group == "session" else None
    console = style.console()
    rows = summary["rows"]
    zone = f" ({summary['timeZone']})" if group in ("day", "week", "month") else ""
    console.print(f"[bold]Usage by {args.by}{zone}[/bold]", highlight=False)
    _header(console, args.by)
    largest = max((tokens(r["total"]) for r in rows), default=0)
    for row in rows:
        _row(console, _key_text(group, row["key"], listed), row["total"], largest)
    total = summary["total"]
    _row(console, f"total ({total['sessions']} sess.)", total, 0, style="bold")
    for skipped in summary["skipped"]:
        console.print(
            f"[yellow]skipped[/yellow] {safe(skipped['sessionId'])}: {safe(skipped['code'])}",
            highlight=False,
        )
    _footnotes(console, total, summary["prices"])


def show_session(client: Any, args: argparse.Namespace) -> None:
    from rich.text import Text

    from . import style

    listed = listing(client)
    sid = listed.resolve(args.session_id)
    params = {"sessionId": sid, "includeDescendants": bool(args.descendants)}
    usage = client.request("sessionQuery/readUsage", params)
    if args.json:
        return print_json(usage)
    console = style.console()
    seeded = usage["seedResponses"]
    console.print(
        f"[bold]Usage of {safe(listed.short(sid))}[/bold] ({safe(usage['agent'])})"
        + (f", {seeded} seeded responses counted for its parent" if seeded else ""),
        highlight=False,
    )
    _header(console, "seq  time")
    total = usage["total"]
    largest = max((tokens(s) for s in usage["steps"]), default=0)
    for step in usage["steps"]:
        counted = {**step, "responses": 1, "unpricedResponses": int(step["costUsd"] is None)}
        _row(console, f"{step['seq']:<5}{when(step['time'], '%m-%d %H:%M')}", counted, largest)
    _row(console, "total", total, 0, style="bold")
    peak = usage["peakContext"]
    if peak is not None:
        console.print(
            Text(
                f"peak context {compact(peak['context'])} tokens at seq {peak['seq']}; "
                f"models: {', '.join(total['models']) or '-'}"
            )  # fmt: skip
        )
    if args.descendants:
        console.print("[bold]with descendants[/bold]", highlight=False)
        _header(console, "session")
        whole = usage["withDescendants"]
        for child in usage["descendants"]:
            key = f"{_cut(listed.short(child['sessionId']), KEY - 1)}"
            _row(console, key, child["total"], tokens(whole))
        _row(console, f"total ({whole['sessions']} sess.)", whole, 0, style="bold")
    shown = usage["withDescendants"] if args.descendants else total
    _footnotes(console, shown, usage["prices"])


def cmd_usage(args: argparse.Namespace) -> None:
    init: dict[str, Any] = {}
    if args.prices is not None:
        init["prices"] = os.path.abspath(args.prices)
    with open_client(args, **init) as client:
        if args.session_id is None:
            show_summary(client, args)
        else:
            show_session(client, args)


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    from . import style

    output = argparse.ArgumentParser(add_help=False)
    style.add_option(output)
    usage = sub.add_parser(
        "usage",
        parents=[common, output],
        help="tokens and cost by day, model, agent, project or session, or of one session",
        description="Tokens and cost from what the agents recorded, each API response counted "
        "once (docs/usage.md): one row per group with a bar of its tokens, then the totals. "
        "With SESSION_ID: that session's responses. Costs are list prices from genai-prices "
        "(or --prices FILE); a model without a price says so.",
    )
    usage.add_argument("session_id", nargs="?", help="one session: an id, short form or prefix")
    usage.add_argument(
        "--by", choices=list(GROUPS), default="day", help="how to group the rows (default: day)"
    )
    usage.add_argument(
        "--since",
        metavar="WHEN",
        type=since_ms,
        help="only responses since WHEN: 30m, 12h, 7d, 2w or an ISO date (UTC)",
    )
    usage.add_argument(
        "--until", metavar="WHEN", type=since_ms, help="only responses before WHEN (same forms)"
    )
    usage.add_argument("--tz", metavar="ZONE", help="IANA time zone of days (default: local)")
    usage.add_argument(
        "--descendants", action="store_true", help="with SESSION_ID: add its sub-agents and forks"
    )
    usage.add_argument(
        "--prices", metavar="FILE", help="a prices file whose rates override genai-prices'"
    )
    usage.set_defaults(func=cmd_usage)
