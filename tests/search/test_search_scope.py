"""A workspace scope applied inside the search (search/scope.py) equals the steps of tools.md §1.6
read literally: a listing ``V`` of visible sessions, a parent clause of the requested ids in ``V``
(plus null), a cwd clause of ``V``'s distinct cwds, then a plain searchSessions; and the hits'
parents it reports visible are exactly those in ``V``. Random corpora with live, persisted and
shadowed sessions, nested and sibling cwds, hidden and missing parents, bound or not, and changes
between searches (the cwd memo must follow every write)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_query_server.model.workspace import Workspace
from dsh_query_server.search.scope import Scope
from tests.builders import U, hdr
from tests.fakes import MemoryBackend
from tests.search_helpers import from_json, j, make, values

CWDS = ["/w/app", "/w/app/pkg", "/w/app/x/../y", "/w//app/./q", "/w/app-old", "/w", "/W/app", None]
ROOTS = ["/w/app", "/w", "/", "/w/app-old/", "/nowhere", "rel"]
IDS = ["a", "b", "c", "d", "e", "f"]

# A session's header never changes; what each step adds or makes live does.
identities = st.fixed_dictionaries(
    {sid: st.tuples(st.sampled_from(CWDS), st.sampled_from([None, *IDS, "missing"])) for sid in IDS}
)
session = st.fixed_dictionaries(
    {
        "text": st.sampled_from(["needle", "needle needle", "needle hay", "hay"]),
        "live": st.booleans(),
        "persisted": st.booleans(),
    }
)
corpus = st.dictionaries(st.sampled_from(IDS), session, max_size=6)


def header(sid, identity):
    cwd, parent = identity
    extra = {} if cwd is None else {"cwd": cwd}
    if parent is not None and parent != sid:
        extra["parentSession"] = parent
    return hdr(sid, 1, **extra)


def expected(service, store, backend, bound, workspace, parents, include_roots, query):
    """tools.md §1.6 steps 2-5 and 7 with a listing of the live store and the bound backend."""
    listing = {}
    if bound:
        listing.update({sid: h for sid, (h, _) in backend.sessions.items()})
    for sid in store.ids():
        listing[sid] = store.snapshot(sid).header
    visible = {sid: h for sid, h in listing.items() if workspace.visible(h.cwd)}
    filters = []
    if parents is not None or include_roots:
        values_ = [p for p in parents or [] if p in visible]
        if include_roots:
            values_.append(None)
        if not values_:
            return None, visible
        filters.append({"kind": "parent", "values": values_})
    if not visible:
        return None, visible
    cwds = sorted({h.cwd for h in visible.values() if isinstance(h.cwd, str)})
    filters.append({"kind": "cwd", "values": cwds})
    page = from_json(service.search_sessions)(
        {"query": query, "sessionFilters": filters, "limit": 100}
    )
    return j(page)["items"], visible


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    identity=identities,
    first=corpus,
    second=corpus,
    bound=st.booleans(),
    roots=st.lists(st.sampled_from(ROOTS), max_size=3),
    parents=st.none() | st.lists(st.sampled_from([*IDS, "missing"]), max_size=3),
    include_roots=st.booleans(),
)
def test_scoped_search_equals_the_listing_steps(
    identity, first, second, bound, roots, parents, include_roots
):
    store, binding, service = make()
    backend = MemoryBackend()
    mount = binding.mount(backend)
    workspace = Workspace(roots, "/w/app")
    scope = Scope(
        workspace.visible,
        (workspace.base, *workspace.roots),
        None if parents is None else tuple(parents),
        include_roots,
    )
    for step, sessions in enumerate((first, second)):
        for sid, s in sessions.items():
            if s["persisted"] or not s["live"]:
                backend.put(header(sid, identity[sid]), [U(0, s["text"], time=step)])
            if s["live"] and sid not in store.ids():
                store.create(header(sid, identity[sid]), seed=values([U(0, s["text"], time=step)]))
        if step == 0:
            from_json(service.search_sessions)(
                {"query": "warm"}
            )  # indexes, so that the memo is used
            if not bound:
                binding.unmount(mount)
        want, visible = expected(
            service, store, backend, bound, workspace, parents, include_roots, "needle"
        )
        page, visible_parents = from_json(service.search_sessions_scoped)(
            {"query": "needle", "limit": 100}, scope
        )
        items = j(page)["items"]
        assert items == (want or [])
        hit_parents = {h["header"].get("parentSession") for h in items}
        assert visible_parents == {p for p in hit_parents if p in visible}
    service.close()


def test_scoped_cursor_pages_and_binds_the_scope():
    store, _, service = make()
    for i in range(5):
        store.create(hdr(f"s{i}", 1, cwd="/w/app"), seed=values([U(0, "needle", time=i)]))
    workspace = Workspace(["/w/app"], "/")
    scope = Scope(workspace.visible, (workspace.base, *workspace.roots))
    other = Workspace(["/w"], "/")
    wider = Scope(other.visible, (other.base, *other.roots))
    page, _ = from_json(service.search_sessions_scoped)({"query": "needle", "limit": 2}, scope)
    seen = [h.header for h in page.items]
    cursor = page.nextCursor
    while isinstance(cursor, str):
        page, _ = from_json(service.search_sessions_scoped)(
            {"query": "needle", "limit": 2, "cursor": cursor}, scope
        )
        seen += [h.header for h in page.items]
        if isinstance(page.nextCursor, str):
            first_cursor = page.nextCursor
            try:
                from_json(service.search_sessions_scoped)(
                    {"query": "needle", "limit": 2, "cursor": first_cursor}, wider
                )
            except Exception as exc:  # noqa: BLE001 - asserted below
                assert getattr(exc, "code", None) == "SESSION_QUERY_INVALID_CURSOR"
            else:
                raise AssertionError("a cursor of one scope continued another")
        cursor = page.nextCursor
    assert len(seen) == 5
