"""Event relationships (semantics.md §5.2), all from one fold of the whole log."""

from __future__ import annotations

from ..model import wire
from .loaded import Loaded


def trace_event(loaded: Loaded, seq: int) -> wire.SessionEventTraceObservation:
    fold = loaded.fold()
    events = loaded.events
    target = events[seq]
    chain: list[int] = []
    node = seq
    while node in fold.shadowed_by:
        node = fold.shadowed_by[node]
        chain.append(node)
    replacement = fold.replacement_of.get(seq)
    sources = target.source_seqs
    derived = [
        e.seq
        for e in events[seq + 1 :]
        if isinstance(e.source_seqs, list)
        and any(s == seq and type(s) is not bool for s in e.source_seqs)
    ]
    result = wire.SessionEventTraceObservation(
        target=wire.SessionEventRecord(
            sessionId=loaded.session_id,
            seq=seq,
            type=target.type,
            time=target.time,
            surface=fold.surface(seq),
        ),
        replacementChain=chain,
        replacedEventSeqs=list(replacement.shadowed_seqs) if replacement else [],
        sourceEventSeqs=list(sources) if isinstance(sources, list) else [],
        derivedEventSeqs=derived,
        session=wire.raw(loaded.header),
    )
    if seq in fold.shadowed_by:
        result.replacedBy = fold.shadowed_by[seq]
    return result
