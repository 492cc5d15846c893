"""The read-only ``gemini:`` backend: Gemini CLI sessions as dsh logical logs (importers.md §7)."""
