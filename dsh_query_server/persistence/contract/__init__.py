"""The persistence contract (persistence.md §2), which the query service, search, export and the
checkpointer read through the mount's door (persistence/reads.py), by responsibility:
``backend`` (the operations every backend has), ``capabilities`` (the optional read paths,
resolved once at mount), ``results`` (what reads return) and ``errors`` (what they raise).

Backends are synchronous objects: the server runs every request in a worker thread, so a backend
call that has started is always awaited until it settles (semantics.md §3.0.6) simply because the
request's own thread is the one making it. Cancellation reaches a backend through ``token``.
"""
