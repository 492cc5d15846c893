"""Where Copilot CLI keeps its sessions (importers.md §9.1) and which sub-agents one log holds
(§9.2): sub-agents write into their parent's ``events.jsonl``, marked by an ``agentId``."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

from ...cancel import NULL_TOKEN, CancelToken
from ..importing.lines import Item, Record, final_fragment, plaintext, split_line
from ..importing.survey import Survey, is_dir
from ..importing.values import nonempty, obj, parse_time

SESSION_STATE = "session-state"
EVENTS = "events.jsonl"
WORKSPACE = "workspace.yaml"
AGENT_PREFIX = "agent-"
# a line can hold a sub-agent's record only if it names one of these (§9.2)
_MARKERS = (b'"agentId"', b'"parentToolCallId"', b'"subagent.started"')


@dataclass(frozen=True, slots=True)
class SessionFile:
    """A session's log as the layout walk found it: ``<id>/events.jsonl`` or the flat
    ``<id>.jsonl`` of 0.0.342 and later 0.0.3xx releases."""

    path: str
    session_id: str
    flat: bool

    @property
    def workspace(self) -> str | None:
        return None if self.flat else os.path.join(os.path.dirname(self.path), WORKSPACE)


def session_files(sv: Survey, home: str, token: CancelToken) -> list[SessionFile]:
    """Every candidate under ``session-state/``; a flat file whose id also has a directory with
    an ``events.jsonl`` is left out (the directory layout replaced it)."""
    dirs: list[SessionFile] = []
    flats: list[SessionFile] = []
    for entry in sv.entries(os.path.join(home, SESSION_STATE)):
        token.raise_if_cancelled()
        if is_dir(entry):
            dirs.append(SessionFile(os.path.join(entry.path, EVENTS), entry.name, False))
        elif entry.name.endswith(".jsonl") and len(entry.name) > 6:
            flats.append(SessionFile(entry.path, entry.name[:-6], True))
    if not flats:
        return dirs
    have = {f.session_id for f in dirs if os.path.exists(f.path)}
    return dirs + [f for f in flats if f.session_id not in have]


def session_path(home: str, session_id: str) -> str | None:
    """The log a trunk id names (for ``inspect`` of an id listing left out), or None."""
    if "/" in session_id or session_id in ("", ".", ".."):
        return None
    root = os.path.join(home, SESSION_STATE)
    for path in (os.path.join(root, session_id, EVENTS), os.path.join(root, session_id + ".jsonl")):
        if os.path.isfile(path):
            return path
    return None


def agent_key(record: dict[str, object]) -> str | None:
    """The sub-agent a record belongs to: its envelope ``agentId``, else the legacy
    ``data.agentId`` or ``data.parentToolCallId``; None for the main agent's records."""
    key = nonempty(record.get("agentId"))
    if key is not None:
        return key
    data = obj(record.get("data"))
    if data is None:
        return None
    return nonempty(data.get("agentId")) or nonempty(data.get("parentToolCallId"))


def child_id(session_id: str, key: str) -> str:
    return f"{session_id}/{AGENT_PREFIX}{key}"


class Presets:
    """The agent names that ``subagent.started`` records gave, by the keys they name (their
    envelope ``agentId`` and their ``data.toolCallId``)."""

    def __init__(self) -> None:
        self._names: dict[str, str] = {}

    def note(self, record: dict[str, object]) -> None:
        if record.get("type") != "subagent.started":
            return
        data = obj(record.get("data"))
        name = nonempty(data.get("agentName")) if data is not None else None
        if name is None or data is None:
            return
        for key in (nonempty(record.get("agentId")), nonempty(data.get("toolCallId"))):
            if key is not None:
                self._names.setdefault(key, name)

    def of(self, key: str) -> str | None:
        return self._names.get(key)


@dataclass(frozen=True, slots=True)
class Agent:
    """One sub-agent of a log: its key, the time of its first record, and the agent name of a
    ``subagent.started`` record at or before that record."""

    key: str
    time: int | None
    preset: str | None


def _marked_items(path: str, size: int, token: CancelToken) -> Iterator[Item]:
    """The items of the lines that name a marker, split as ``inspect`` splits them (§0.1)."""
    with open(path, "rb") as stream:
        pending = b""
        base = 0
        for piece in plaintext(stream, size, token, False):
            data = pending + piece
            cut = 0
            while (nl := data.find(b"\n", cut)) >= 0:
                raw = data[cut:nl]
                if any(m in raw for m in _MARKERS):
                    yield from split_line(raw, 0, base + cut)
                cut = nl + 1
            pending, base = data[cut:], base + cut
        if pending and any(m in pending for m in _MARKERS):
            yield from final_fragment(pending, 0, base)


def scan_agents(
    path: str, token: CancelToken = NULL_TOKEN
) -> tuple[os.stat_result | None, tuple[Agent, ...]]:
    """The file's stat and its sub-agents in order of first appearance (no stat: it vanished).
    Only lines naming a marker are parsed, so a log costs about one pass of ``bytes.find``."""
    try:
        st = os.stat(path)
        presets = Presets()
        seen: dict[str, Agent] = {}
        for item in _marked_items(path, st.st_size, token):
            if not isinstance(item, Record):
                continue
            presets.note(item.value)
            key = agent_key(item.value)
            if key is not None and key not in seen:
                time = parse_time(item.value.get("timestamp"))
                seen[key] = Agent(key, time, presets.of(key))
    except FileNotFoundError:
        return None, ()
    except OSError:
        try:
            return os.stat(path), ()
        except OSError:
            return None, ()
    return st, tuple(seen.values())
