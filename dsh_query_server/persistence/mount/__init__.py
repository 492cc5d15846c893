"""Mounting (persistence.md §1): URIs, the backend each scheme opens (the importers' table
included), composite mounts and the binding the server reads through."""
