"""dsh-query-server: exact, read-only inspection of agent session histories over JSON-RPC."""

__version__ = "0.1.0"
