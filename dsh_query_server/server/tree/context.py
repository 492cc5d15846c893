"""One tree request: the runtime, its cancellation token and the view, with the service calls
the views make. Every read goes through the query service (its header checks, its error mapping,
its worker pool for labels)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ... import errors
from ...cancel import CancelToken
from ...core.runtime import Runtime
from ...errors import QueryError
from ...persistence.mount.binding import Binding
from ...query.loaded import Loaded, Record
from .ids import Key, encode_id
from .labels import Lag, SessionInfo, read_labels, read_lags

LABEL_BUDGET_SECONDS = 2.0  # time a level may spend reading persisted logs for labels
# The part of a level's progress bar its listing owns when labels are read after it: the labels'
# count takes the rest (protocol.md §8). Half: a cold listing of a big home and a page of labels
# (at most LABEL_BUDGET_SECONDS) take times of the same order.
LISTING_PART = 50


class Ctx:
    def __init__(self, rt: Runtime, token: CancelToken, view: str, scope: object = None) -> None:
        self.rt = rt
        self.token = token
        self.view = view
        # The grouping a node was issued under (kinds.Kind.scope); every key built here keeps it.
        self.scope = scope

    def corpus(self, labels: bool = True) -> list[Record]:
        """The corpus listed for one level; ``labels``: the level reads labels after it, which
        then own the second half of the progress bar."""
        with self.token.counting(share=True, upto=LISTING_PART if labels else 100):
            return self.rt.service.corpus(self.token)

    def corpus_or_none(self) -> list[Record] | None:
        """The corpus for finding a parent; None when it cannot be listed (cancellation still
        raises), so an unlistable corpus makes a node a root instead of failing the reveal."""
        try:
            return self.corpus(labels=False)
        except QueryError as exc:
            if exc.code == errors.ABORTED:
                raise
            return None

    def load(self, session_id: str) -> Loaded:
        return self.rt.service.load(session_id, self.token)

    def infos(self, records: Sequence[Record]) -> dict[str, SessionInfo]:
        """Labels for the records of one level (the sessions shown on that page only)."""
        return read_labels(self.rt.service, records, self.token, LABEL_BUDGET_SECONDS)

    def lags(self, records: Sequence[Record]) -> dict[str, Lag]:
        """The "lagging" badge: the checkpointer's own counts first, a stored count otherwise."""
        return read_lags(self.rt.service, records, self._checkpointed, self.token)

    def _checkpointed(self, binding: Binding) -> Mapping[str, int]:
        return self.rt.checkpointer.persisted_counts(binding.identity)

    def id(self, kind: str, *params: object) -> str:
        return encode_id(self.key(kind, *params))

    def key(self, kind: str, *params: object) -> Key:
        if self.scope is None:
            return (self.view, kind, *params)
        return (self.view, kind, *params, self.scope)
