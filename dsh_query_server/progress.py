"""Work-done progress of one request (protocol.md §8, semantics.md §6.5 **[ours]**).

A ``Tracker`` belongs to one request and rides on its cancellation token (``token.progress``),
so code deep below the handler (the index build, a bulk read) reports without new parameters:
``token.progress.report("indexing 512 of 1,600 transcripts", 512, 1600)``. Where it is shown is
the ``Sink``'s business: LSP ``$/progress`` (server/workdone.py), MCP ``notifications/progress``
(mcp/), the command line's bar (cli/progress_bar.py). A request that ends within the delay
(0.4 s; ``DSH_QUERY_PROGRESS_DELAY_MS`` overrides it) shows nothing at all.

The tracker keeps the rules every client relies on: exactly one begin and one end per token
(``finish`` always ends what was begun, on success, cancellation and failure alike), begin
before any report, percentages that never go down (a retried reconcile starts over at 0, the
user's bar does not), and reports sent at most every ``REPORT_SECONDS`` (every change with a
delay of 0, which tests use to see each report).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Protocol

log = logging.getLogger("dsh_query_server")

DELAY_ENV = "DSH_QUERY_PROGRESS_DELAY_MS"
# A request that runs past about half a second shows progress. The begin goes out at 0.4 s, so
# that it is on the client's screen within 0.5 s of the request (bench/progress_line.py).
DEFAULT_DELAY_SECONDS = 0.4
REPORT_SECONDS = 0.1  # at most ten reports a second: the build reports every session


def delay_seconds() -> float:
    """The delay before progress shows: 0.4 s, or ``$DSH_QUERY_PROGRESS_DELAY_MS``."""
    text = os.environ.get(DELAY_ENV)
    if text is None:
        return DEFAULT_DELAY_SECONDS
    try:
        return max(0.0, int(text) / 1000)
    except ValueError:
        return DEFAULT_DELAY_SECONDS


class Sink(Protocol):
    """Where one tracker's progress is shown. ``open`` makes the token usable (LSP may have to
    ask the client to create it first) and calls ``ready(True)`` once it is, ``ready(False)``
    when it cannot be (then nothing else is called); the other three are called in order,
    begin once, end once, never concurrently."""

    def open(self, ready: Callable[[bool], None]) -> None: ...

    def begin(self, title: str, message: str | None, percentage: int | None) -> None: ...

    def report(self, message: str | None, percentage: int | None) -> None: ...

    def end(self, message: str) -> None: ...


# -- the shared clock ------------------------------------------------------------------------------


class _Clock:
    """One daemon thread that runs callbacks at their time: arming a tracker is a heap push,
    not a thread per request."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._order = itertools.count()
        self._thread: threading.Thread | None = None

    def at(self, when: float, action: Callable[[], None]) -> None:
        with self._cond:
            heapq.heappush(self._heap, (when, next(self._order), action))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="progress", daemon=True)
                self._thread.start()
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._heap or self._heap[0][0] > time.monotonic():
                    wait = self._heap[0][0] - time.monotonic() if self._heap else None
                    self._cond.wait(wait)
                _, _, action = heapq.heappop(self._heap)
            try:
                action()
            except Exception:  # a sink that fails must not stop the clock for every request
                log.exception("progress callback failed")


_CLOCK = _Clock()


# -- the tracker -----------------------------------------------------------------------------------

_IDLE, _OPENING, _OPEN, _ENDED = range(4)


class Tracker:
    """The progress of one request. ``report`` may be called from any thread, any number of
    times; ``finish`` once, by the request's owner, when the answer is ready."""

    def __init__(self, sink: Sink | None, title: str, delay: float | None = None) -> None:
        self._sink = sink
        self.title = title
        self._delay = delay_seconds() if delay is None else delay
        self._lock = threading.Lock()
        self._state = _IDLE if sink is not None else _ENDED
        self._message: str | None = None
        self._percentage: int | None = None
        self._sent = 0.0  # when the last report went out
        self._dirty = False  # state changed since the last send
        self._ending: str | None = None  # finish came while the token was being opened
        self._interval = min(REPORT_SECONDS, self._delay)

    @property
    def active(self) -> bool:
        """Something shows this tracker's progress (its sink exists and it has not ended)."""
        return self._sink is not None and self._state != _ENDED

    @property
    def percentage(self) -> int | None:
        """The percentage reported so far (None: none yet), where a phase that follows starts."""
        return self._percentage

    def arm(self) -> None:
        """Start the delay; after it, the progress opens unless the request has finished."""
        if self._sink is None:
            return
        if self._delay <= 0:
            self._open()
        else:
            _CLOCK.at(time.monotonic() + self._delay, self._open)

    def report(
        self, message: str | None, done: int | None = None, total: int | None = None
    ) -> None:
        """The work's state: a message and, with ``total``, ``done`` of it as a percentage."""
        if self._sink is None or self._state == _ENDED:
            return
        percentage = None
        if done is not None and total:
            percentage = max(0, min(100, done * 100 // total))
        with self._lock:
            if percentage is not None and self._percentage is not None:
                percentage = max(percentage, self._percentage)  # never backwards
            if message == self._message and percentage == self._percentage:
                return
            self._message = message
            if percentage is not None:
                self._percentage = percentage
            self._dirty = True
            if self._state != _OPEN:
                return
            now = time.monotonic()
            if now - self._sent < self._interval:
                return
            self._send_report(now)

    def finish(self, message: str = "done") -> None:
        """End the progress (once; later calls do nothing). Nothing is sent when it never
        opened; a token still being opened gets its begin and end once it is ready."""
        if self._sink is None:
            return
        with self._lock:
            state, self._state = self._state, _ENDED
            if state == _OPEN:
                self._sink.end(message)
            elif state == _OPENING:
                self._ending = message

    # -- internals ---------------------------------------------------------------------------------

    def _open(self) -> None:
        sink = self._sink
        with self._lock:
            if sink is None or self._state != _IDLE:
                return
            self._state = _OPENING
        sink.open(self._ready)

    def _ready(self, ok: bool) -> None:
        sink = self._sink
        assert sink is not None
        with self._lock:
            ending = self._ending
            if not ok or (self._state != _OPENING and ending is None):
                self._state = _ENDED
                return
            sink.begin(self.title, self._message, self._percentage)
            self._sent, self._dirty = time.monotonic(), False
            if ending is not None:  # finished while the client created the token
                sink.end(ending)
                return
            self._state = _OPEN

    def _send_report(self, now: float) -> None:
        assert self._sink is not None
        self._sink.report(self._message, self._percentage)
        self._sent, self._dirty = now, False


NULL_TRACKER = Tracker(None, "")  # shows nothing: a token without a client that shows progress


# -- a long listing's count ------------------------------------------------------------------------


class Count:
    """``listing 1,200 of 3,810 transcripts`` (protocol.md §8): the transcripts a request's
    listing has read of those its walk found, told by the importers' one listing loop
    (persistence/importing/backend.py ``each``) and kept on the request's token while the
    listing runs (``CancelToken.counting``).

    Nothing is reported before the listing has run past the progress delay (0.4 s: a quick
    listing, and a warm one, says nothing, also under a request already shown), then at most
    every ``REPORT_SECONDS``: a listing of 4,000 transcripts costs a clock read per transcript,
    not a report. With ``share`` the listing is the request's whole work and its percentage is
    the request's; without, a later phase owns the percentage (a search's index build, a
    read's bytes, an export's sessions: the listing's 100 would pin them) and only the message
    is reported. With ``upto`` below 100 the listing's percentage ends there, and a phase
    that follows runs from it to 100 (``Tally``: the tree's labels after its listing). The homes
    of a composite mount list one after another (``part``): each gets an equal share of the
    percentage, while the message counts every home's transcripts found so far."""

    __slots__ = ("_tracker", "_share", "_upto", "_next", "_interval", "_home", "_before", "_index")

    def __init__(self, tracker: Tracker, share: bool, upto: int = 100) -> None:
        self._tracker = tracker
        self._share = share
        self._upto = upto
        delay = delay_seconds()
        self._next = time.monotonic() + delay
        self._interval = min(REPORT_SECONDS, delay)
        self._home = (0, 0)  # this home's transcripts listed, of those found
        self._before = (0, 0)  # the same, summed over the homes listed before it
        self._index = (0, 1)  # this home, of the homes

    def part(self, index: int, parts: int) -> None:
        """Home ``index`` of ``parts`` (a composite's members, in order) lists next."""
        self._before = (self._before[0] + self._home[0], self._before[1] + self._home[1])
        self._home, self._index = (0, 0), (index, parts)

    def at(self, done: int, total: int) -> None:
        """This home's listing has read ``done`` of the ``total`` transcripts its walk found
        (never fewer than told before: a listing run again after another's shows no drop)."""
        home = self._home
        if total == home[1] and done < home[0]:
            done = home[0]
        self._home = (done, total)
        now = time.monotonic()
        if now < self._next:
            return
        self._next = now + self._interval
        before = self._before
        message = f"listing {before[0] + done:,} of {before[1] + total:,} transcripts"
        if not self._share:
            self._tracker.report(message)
            return
        # per mille of the whole: the homes listed before and this one's part of its own (a
        # home whose walk found nothing is listed)
        index, parts = self._index
        own = min(1000, 1000 * done // total) if total else 1000
        self._tracker.report(message, (1000 * index + own) * self._upto, 1000 * parts * 100)


class Tally:
    """``reading titles 120 of 888 sessions`` (protocol.md §8): a batch of items (``say`` a
    format of ``done`` and ``total``) counted as the pool's workers finish them, in order under a
    lock; the tracker keeps the reports to ten a second. The batch is its request's last phase:
    its percentage runs over what is left of the bar, from where the phase before left it (the
    tree's listing, ``Count``'s ``upto``) to 100, so it never stands still at the top."""

    def __init__(self, tracker: Tracker, total: int, say: str) -> None:
        self._tracker = tracker
        self._total = total
        self._say = say
        self._base = tracker.percentage or 0
        self._done = 0
        self._lock = threading.Lock()

    def one(self) -> None:
        """One more item done."""
        with self._lock:
            self._done += 1
            done, total, base = self._done, self._total, self._base
            message = self._say.format(done=done, total=total)
            self._tracker.report(message, base * total + (100 - base) * done, 100 * total)


# -- background work shown to whoever watches --------------------------------------------------

ViewerFactory = Callable[[str], Tracker]
"""Makes one viewer's tracker for background work of the given title (a created LSP token)."""


class Broadcast:
    """The ``Sink`` of background work that belongs to no request (the index warm-up,
    semantics.md §6.5 **[ours]**): shown to every viewer that ``join``s, also to one that joins
    while the work runs, which starts at the work's current message and percentage. Each viewer
    has a tracker of its own (delay 0: the work's own tracker has waited already), so each keeps
    the per-token rules (one begin, one end, percentages that never go down)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._viewers: dict[object, Tracker] = {}
        self._waiting: dict[object, ViewerFactory] = {}  # joined before the work showed
        self._title: str | None = None  # set at begin
        self._message: str | None = None
        self._percentage: int | None = None
        self._ended = False

    def join(self, key: object, make: ViewerFactory) -> None:
        """Show the work to one more viewer (``key``: its connection), from now until its end."""
        with self._lock:
            if self._ended or key in self._viewers:
                return
            if self._title is None:
                self._waiting[key] = make
                return
            self._start(key, make)

    def leave(self, key: object) -> None:
        """The viewer went away: nothing more is sent to it."""
        with self._lock:
            self._waiting.pop(key, None)
            self._viewers.pop(key, None)

    def open(self, ready: Callable[[bool], None]) -> None:
        ready(True)

    def begin(self, title: str, message: str | None, percentage: int | None) -> None:
        with self._lock:
            self._title, self._message, self._percentage = title, message, percentage
            waiting, self._waiting = self._waiting, {}
            for key, make in waiting.items():
                self._start(key, make)

    def report(self, message: str | None, percentage: int | None) -> None:
        with self._lock:
            self._message, self._percentage = message, percentage
            viewers = list(self._viewers.values())
        for viewer in viewers:
            viewer.report(message, percentage, 100)

    def end(self, message: str) -> None:
        with self._lock:
            self._ended = True
            self._waiting.clear()
            viewers, self._viewers = list(self._viewers.values()), {}
        for viewer in viewers:
            viewer.finish(message)

    def _start(self, key: object, make: ViewerFactory) -> None:
        assert self._title is not None
        viewer = make(self._title)
        viewer.report(self._message, self._percentage, 100)
        viewer.arm()
        self._viewers[key] = viewer
