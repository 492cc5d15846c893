"""The ``opencode:<dir>`` importer (importers.md §8): OpenCode's SQLite store and its legacy JSON
storage read as dsh logical logs."""
