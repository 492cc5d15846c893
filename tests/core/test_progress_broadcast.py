"""progress.Broadcast (the index warm-up's sink, semantics.md §6.5 [ours]): whatever the order in
which viewers join and leave and the work reports, each viewer that saw the work sees exactly one
begin first and, unless it left, exactly one end last, with percentages that never go down; a
viewer that joins after the end sees nothing."""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import given
from hypothesis import strategies as st

from dsh_query_server.progress import Broadcast, Tracker


class Recorder:
    """A Sink that keeps what it was given, in order."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, int | None]] = []

    def open(self, ready: Callable[[bool], None]) -> None:
        ready(True)

    def begin(self, title: str, message: str | None, percentage: int | None) -> None:
        self.seen.append(("begin", percentage))

    def report(self, message: str | None, percentage: int | None) -> None:
        self.seen.append(("report", percentage))

    def end(self, message: str) -> None:
        self.seen.append(("end", None))


steps = st.lists(
    st.one_of(
        st.tuples(st.just("join"), st.integers(0, 3)),
        st.tuples(st.just("leave"), st.integers(0, 3)),
        st.tuples(st.just("report"), st.integers(0, 100)),
    ),
    max_size=30,
)


@given(before=steps, after=steps, late=st.booleans())
def test_every_viewer_sees_one_begin_and_one_end(before, after, late):
    broadcast = Broadcast()
    work = Tracker(broadcast, "dsh-query warmUp", delay=0)
    viewers: dict[int, list[Recorder]] = {}
    left: set[int] = set()

    def run(step: tuple[str, int]) -> None:
        kind, n = step
        if kind == "join":
            recorder = Recorder()
            viewers.setdefault(n, []).append(recorder)
            left.discard(n)
            broadcast.join(n, lambda title: Tracker(recorder, title, delay=0))
        elif kind == "leave":
            left.add(n)
            broadcast.leave(n)
        else:
            work.report(f"indexing {n} of 100 transcripts", n, 100)

    for step in before:
        run(step)
    work.arm()
    for step in after:
        run(step)
    work.finish("done")
    if late:
        late_viewer = Recorder()
        broadcast.join("late", lambda title: Tracker(late_viewer, title, delay=0))
        assert late_viewer.seen == []
    for n, recorders in viewers.items():
        for recorder in recorders:
            kinds = [k for k, _ in recorder.seen]
            if not kinds:
                continue  # joined again while an earlier join of its key was shown, or late
            assert kinds[0] == "begin" and kinds.count("begin") == 1, kinds
            assert kinds.count("end") <= 1
            if "end" in kinds:
                assert kinds[-1] == "end"
            percentages = [p for _, p in recorder.seen if p is not None]
            assert percentages == sorted(percentages)
        last = recorders[-1]
        if n not in left and last.seen:
            assert last.seen[-1][0] == "end"  # a viewer that stayed sees the end
