"""The sync engine of ``dsh-query sync`` (postgres.md §6): ``engine`` (copy a source's sessions),
``cycle`` (one pass over the sources), ``group`` (small sessions sharing a transaction), ``log``
(what is copied of one session), ``state`` (the local proofs that skip unchanged sessions)."""
