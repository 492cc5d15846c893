"""The read-only ``codex:`` backend: Codex rollouts as dsh logical logs (importers.md §2)."""
