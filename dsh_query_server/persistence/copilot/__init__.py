"""The ``copilot:<home>`` importer: GitHub Copilot CLI session-state logs (importers.md §9)."""
