"""The ``qwen:<home>`` importer (importers.md §10): Qwen Code's chat records as dsh logs."""
