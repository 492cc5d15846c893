"""What a model response cost (usage.md §3): rates from the pinned ``genai-prices`` package, read
from the data it ships (no network), or from a prices file that overrides it model by model.

A response is priced from its prompt (``context``, the whole prompt as the provider counted it),
its cache reads and writes and its output (reasoning is inside it), in ``genai-prices``' own
terms: the prompt is its ``input_tokens``, cache reads and writes are parts of it billed at their
own rates when the model has them (else as plain input), and a tiered rate takes the tier of the
prompt's size (the whole request at the tier's rate once the prompt is past the tier's start).
Rates are looked up by the response's time, so a price change applies from its date on. The
arithmetic is exact (``Decimal``), so any grouping of responses adds up to the same total.
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import json
import os
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from .. import errors
from ..errors import QueryError
from ..values import is_safe_integer

MILLION = Decimal(1_000_000)
# A rate in USD per million tokens: the base, then (tier start, rate) by ascending start.
Rate = tuple[Decimal, tuple[tuple[int, Decimal], ...]]


@dataclass(frozen=True, slots=True)
class Rates:
    """One model's rates at one time; a rate the source does not give is None."""

    input: Rate | None
    cache_read: Rate | None
    cache_write: Rate | None
    output: Rate | None

    def cost(self, prompt: int, cache_read: int, cache_write: int, output: int) -> Decimal | None:
        """USD for one response; None when its counts contradict each other (cache parts larger
        than the prompt)."""
        plain = prompt
        if self.cache_read is not None:
            plain -= cache_read
        if self.cache_write is not None:
            plain -= cache_write
        if plain < 0:
            return None
        total = Decimal(0)
        for rate, count in (
            (self.input, plain),
            (self.cache_read, cache_read),
            (self.cache_write, cache_write),
            (self.output, output),
        ):
            if rate is not None and count:
                total += _at(rate, prompt) * count
        return total / MILLION


def _at(rate: Rate, prompt: int) -> Decimal:
    base, tiers = rate
    for start, price in reversed(tiers):
        if prompt > start:
            return price
    return base


@dataclass(frozen=True, slots=True)
class Price:
    rates: Rates
    source: str  # what priced it: "genai-prices 0.2.3 anthropic/claude-opus-4-5", a file entry


def utc(time_ms: Any) -> dt.datetime:
    """The instant of an event time; now for one that is not a time on the calendar."""
    if is_safe_integer(time_ms):
        try:
            return dt.datetime.fromtimestamp(time_ms // 1000, dt.UTC)
        except (ValueError, OverflowError, OSError):
            pass
    return dt.datetime.now(dt.UTC)


class GenaiPrices:
    """The rates ``genai-prices`` ships, per (provider, model) and request time."""

    def __init__(self) -> None:
        from genai_prices import data_snapshot

        self.version = importlib.metadata.version("genai-prices")
        self._snapshot = data_snapshot.get_snapshot()
        self._providers = {p.id for p in self._snapshot.providers}
        self._models: dict[tuple[str | None, str], Any] = {}
        self._rates: dict[int, tuple[Any, Price]] = {}

    @property
    def source(self) -> str:
        return f"genai-prices {self.version}"

    def price(self, provider: str | None, model: str, when: dt.datetime) -> Price | None:
        key = (provider, model)
        if key not in self._models:
            self._models[key] = self._find(provider, model)
        found = self._models[key]
        if found is None:
            return None
        provider_info, model_info = found
        model_price = model_info.get_prices(when)
        cached = self._rates.get(id(model_price))
        if cached is None:  # the price object is kept with it, so its id stays its own
            source = f"{self.source} {provider_info.id}/{model_info.id}"
            cached = (model_price, Price(_genai_rates(model_price), source))
            self._rates[id(model_price)] = cached
        return cached[1]

    def _find(self, provider: str | None, model: str) -> Any:
        hint = provider if provider in self._providers else None
        try:
            return self._snapshot.find_provider_model(model, None, hint, None)
        except LookupError:
            if hint is None:
                return None
        try:  # the provider has no such model: the model's own maker may
            return self._snapshot.find_provider_model(model, None, None, None)
        except LookupError:
            return None


def _genai_rate(value: Any) -> Rate | None:
    if value is None:
        return None
    if isinstance(value, Decimal):
        return (value, ())
    return (value.base, tuple((tier.start, tier.price) for tier in value.tiers))


def _genai_rates(model_price: Any) -> Rates:
    return Rates(
        input=_genai_rate(model_price.input_mtok),
        cache_read=_genai_rate(model_price.cache_read_mtok),
        cache_write=_genai_rate(model_price.cache_write_mtok),
        output=_genai_rate(model_price.output_mtok),
    )


# -- the prices file (usage.md §3.2) -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Entry:
    model: str
    provider: str | None
    since: dt.date | None
    rates: Rates


def _bad(path: str, detail: str) -> QueryError:
    return QueryError(errors.INVALID_CONFIG, f"session-query: prices file {path}: {detail}")


def _decimal(path: str, where: str, value: Any) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise _bad(path, f"{where} must be a number of USD per million tokens")
    try:
        out = Decimal(str(value))
    except InvalidOperation:
        raise _bad(path, f"{where} must be a number of USD per million tokens") from None
    if not out.is_finite() or out < 0:
        raise _bad(path, f"{where} must be a finite number >= 0")
    return out


_FIELDS = (("input", "input"), ("cacheRead", "cache_read"), ("cacheWrite", "cache_write"))
_FIELDS += (("output", "output"),)


def _entry(path: str, i: int, raw: Any) -> _Entry:
    where = f"prices[{i}]"
    if not isinstance(raw, dict):
        raise _bad(path, f"{where} must be an object")
    model = raw.get("model")
    if not isinstance(model, str) or not model:
        raise _bad(path, f"{where}.model must be a non-empty string")
    provider = raw.get("provider")
    if provider is not None and not isinstance(provider, str):
        raise _bad(path, f"{where}.provider must be a string")
    since = raw.get("since")
    day: dt.date | None = None
    if since is not None:
        try:
            day = dt.date.fromisoformat(since) if isinstance(since, str) else None
        except ValueError:
            day = None
        if day is None:
            raise _bad(path, f"{where}.since must be a date YYYY-MM-DD")
    tiers = raw.get("tiers", [])
    if not isinstance(tiers, list):
        raise _bad(path, f"{where}.tiers must be an array")
    starts: list[int] = []
    for j, tier in enumerate(tiers):
        above = tier.get("above") if isinstance(tier, dict) else None
        if not isinstance(above, int) or isinstance(above, bool) or above < 0:
            raise _bad(path, f"{where}.tiers[{j}].above must be an integer >= 0")
        starts.append(above)
    if starts != sorted(starts):
        raise _bad(path, f"{where}.tiers must be in ascending order of above")
    rates: dict[str, Rate | None] = {}
    for key, attr in _FIELDS:
        if key not in raw:
            rates[attr] = None
            continue
        base = _decimal(path, f"{where}.{key}", raw[key])
        steps = []
        for j, tier in enumerate(tiers):
            if key in tier:
                steps.append((starts[j], _decimal(path, f"{where}.tiers[{j}].{key}", tier[key])))
        rates[attr] = (base, tuple(steps))
    return _Entry(model.lower(), provider, day, Rates(**rates))


class PriceFile:
    """Negotiated rates: the models it lists are priced from it, the others are not."""

    def __init__(self, path: str) -> None:
        self.path = path
        try:
            with open(path, "rb") as f:
                document = json.loads(f.read())
        except OSError as exc:
            raise _bad(path, exc.strerror or "unreadable") from None
        except ValueError:
            raise _bad(path, "not JSON") from None
        listed = document.get("prices") if isinstance(document, dict) else None
        if not isinstance(listed, list):
            raise _bad(path, 'it must be an object with a "prices" array')
        self._entries: dict[str, list[_Entry]] = {}
        for i, raw in enumerate(listed):
            entry = _entry(path, i, raw)
            self._entries.setdefault(entry.model, []).append(entry)
        for entries in self._entries.values():  # the latest start first; no start is the oldest
            entries.sort(key=lambda e: e.since or dt.date.min, reverse=True)

    def price(self, provider: str | None, model: str, when: dt.datetime) -> Price | None:
        day = when.date()
        for entry in self._entries.get(model.lower(), ()):
            if entry.provider is not None and entry.provider != provider:
                continue
            if entry.since is None or entry.since <= day:
                since = f" since {entry.since}" if entry.since else ""
                return Price(entry.rates, f"prices file {self.path}: {entry.model}{since}")
        return None


class PriceTable:
    """The prices file's entries first, then ``genai-prices``."""

    def __init__(self, path: str | None = None) -> None:
        self.file = PriceFile(os.path.abspath(path)) if path else None
        self.package = GenaiPrices()
        self.source = self.package.source
        if self.file is not None:
            self.source = f"prices file {self.file.path}, then {self.package.source}"

    def price(self, provider: str | None, model: str | None, time_ms: Any) -> Price | None:
        """The price of a response at ``time_ms`` (now, for a response without a time)."""
        if model is None:
            return None
        when = utc(time_ms)
        found = None
        if self.file is not None:
            found = self.file.price(provider, model, when)
        return found if found is not None else self.package.price(provider, model, when)
