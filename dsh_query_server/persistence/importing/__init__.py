"""Shared machinery of the read-only importers (importers.md §0, §3)."""
