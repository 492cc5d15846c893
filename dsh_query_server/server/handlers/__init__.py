"""The handlers of our methods, one module per feature; importing this package registers every
method (server/registry.py). Where is method X handled: ``grep -rn '"X"' server/handlers``.

A new feature module is imported here; a new method in an existing one needs nothing here.
"""

from . import events, export, persistence, search, sessions, store, tree, usage

__all__ = ["events", "export", "persistence", "search", "sessions", "store", "tree", "usage"]
