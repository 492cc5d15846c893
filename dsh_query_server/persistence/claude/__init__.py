"""The read-only ``claude:`` backend: Claude Code transcripts as dsh logical logs
(importers.md §1)."""
