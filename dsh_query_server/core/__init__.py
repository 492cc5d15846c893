"""The application core the JSON-RPC server (server/) and the MCP server (mcp/) share: the
configuration loader, the runtime (mount, store, query and search services), the checkpointer and
the freshness watcher."""
