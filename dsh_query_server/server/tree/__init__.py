"""Editor-neutral tree views (protocol.md §6): ``sessionQuery/treeChildren`` and ``treeParent``.

The server computes every node, so VS Code and Neovim render the same tree. Design points:

* **Stateless, self-describing node ids** (``ids``): ``[view, kind, *params]``, each view's node
  kinds named in its ``VIEW`` registration (``registry``); an id survives restarts and refreshes.
* **Errors are nodes.** A failure while computing a level (session gone, persistence down,
  corrupt log, cycle) is answered as one node with ``contextValue: "error"`` and the error's
  message as label, so a tree never breaks on a bad session. Only bad params fail the request,
  and cancellation still answers ``-32800`` (the client asked for it).
* **Paging.** A level never has more than ``MAX_CHILDREN`` (200) children: when a list is longer,
  a page shows ``PAGE`` (199) entries and a final ``more`` node whose children are the next page.
  Fixed page boundaries make a node's parent computable from its index alone for event lists
  (seqs never move: logs only grow).
* **Cost.** One service call per level where possible. A sessions/lineage level is one corpus
  listing (no log loads) plus, for the labels of the sessions shown on that page only, a
  title/first-message projection through the query service (``labels``: live sessions
  from memory, persisted-only ones on the service's worker pool, the cost of ``readTitles`` of
  the page) and the "lagging" check. An event level is one single-target load and fold.
  ``treeParent`` is free except where a position must be recomputed (a session's page, a
  descendant's parent): one listing.

Modules: ``ids`` (codec, kinds, paging), ``labels`` (the title/first-message projection and the
lag check), ``nodes`` (wire shapes, labels), ``context`` (one request's service calls), one
module per view (``sessions``, ``events``, ``lineage``, ``event_trace``), ``registry`` (the views,
the two requests), ``commands`` (ids the editors share).
"""

from __future__ import annotations

from .ids import MAX_CHILDREN, PAGE
from .registry import VIEWS, tree_children, tree_parent

__all__ = [
    "MAX_CHILDREN",
    "PAGE",
    "VIEWS",
    "tree_children",
    "tree_parent",
]
