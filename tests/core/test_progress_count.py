"""progress.Count, a long listing's ``listing k of n transcripts`` (protocol.md §8 **[ours]**):
whatever the homes (a composite's members, each listed once or listed again after a request
waited for another's listing of it), what the count hands its tracker never goes back: the
percentage rises to 100 at the last home's end and stays within each home's share, ``k`` never
drops and never passes ``n``. Checked before the tracker's own clamp, so the count needs none.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh_query_server.progress import DELAY_ENV, Count, Tally, Tracker


class Recorder:
    """A Sink that accepts every token; the reports are read off ``Raw`` below."""

    def open(self, ready: Callable[[bool], None]) -> None:
        ready(True)

    def begin(self, title: str, message: str | None, percentage: int | None) -> None: ...

    def report(self, message: str | None, percentage: int | None) -> None: ...

    def end(self, message: str) -> None: ...


class Raw(Tracker):
    """A tracker that keeps what the count gives it, before its own clamp (and its percentage,
    where a ``Tally`` after it starts)."""

    def __init__(self) -> None:
        super().__init__(Recorder(), "t", delay=0)
        self.given: list[tuple[str | None, int | None, int | None]] = []

    def report(
        self, message: str | None, done: int | None = None, total: int | None = None
    ) -> None:
        self.given.append((message, done, total))
        super().report(message, done, total)  # never sent (the tracker is not armed): kept


# a home: its transcripts and the points its listing tells (done of them), listed once or twice
homes = st.lists(
    st.integers(0, 40).flatmap(
        lambda total: st.tuples(
            st.just(total),
            st.lists(
                st.lists(st.integers(0, total), max_size=12).map(sorted), min_size=1, max_size=2
            ),
        )
    ),
    min_size=1,
    max_size=4,
)


@given(homes=homes, share=st.booleans(), upto=st.sampled_from([50, 100]))
def test_the_count_never_goes_back(homes, share, upto):
    """``upto``: the tree's listing leaves the bar's second half to its labels (``Tally``)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(DELAY_ENV, "0")  # every call reports
        raw = Raw()
        count = Count(raw, share, upto)
    parts = len(homes)
    for index, (total, listings) in enumerate(homes):
        count.part(index, parts)
        for points in listings:
            for done in points:
                count.at(done, total)
            count.at(total, total)  # ImportBackend.each's last word
    counts: list[tuple[int, int]] = []
    shares: list[float] = []
    for message, done, total in raw.given:
        assert message is not None
        found = re.fullmatch(r"listing ([\d,]+) of ([\d,]+) transcripts", message)
        assert found, message
        k, n = (int(g.replace(",", "")) for g in found.groups())
        assert 0 <= k <= n
        counts.append((k, n))
        if share:
            assert done is not None and total is not None and 0 <= done <= total
            shares.append(done / total)
        else:
            assert done is None and total is None  # a later phase owns the percentage
    assert [k for k, _ in counts] == sorted(k for k, _ in counts)
    assert [n for _, n in counts] == sorted(n for _, n in counts)
    assert counts[-1] == (sum(t for t, _ in homes),) * 2
    if share:
        assert shares == sorted(shares)
        assert shares[-1] == upto / 100


@given(
    before=st.one_of(st.none(), st.integers(0, 100)),
    total=st.integers(1, 60),
    threads=st.integers(1, 4),
)
def test_a_tally_runs_from_where_the_phase_before_left_the_bar(before, total, threads):
    """``reading titles k of n sessions`` counted by several workers at once: ``k`` rises by one
    each time up to ``n``, and the percentage from the phase before's (0 without one) to 100."""
    raw = Raw()
    if before is not None:
        raw.report("listing", before, 100)
        raw.given.clear()
    tally = Tally(raw, total, "reading titles {done:,} of {total:,} sessions")
    share = [total // threads + (i < total % threads) for i in range(threads)]
    workers = [threading.Thread(target=lambda n=n: [tally.one() for _ in range(n)]) for n in share]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    start = before or 0
    messages = [m for m, _, _ in raw.given]
    assert messages == [f"reading titles {k:,} of {total:,} sessions" for k in range(1, total + 1)]
    percentages = [
        done * 100 // whole for _, done, whole in raw.given if done is not None and whole
    ]
    assert percentages == sorted(percentages)
    assert all(start <= p <= 100 for p in percentages) and percentages[-1] == 100
