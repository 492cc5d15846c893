"""``python -m dsh_query_server.mcp``: the MCP server over stdio."""

from .server import main

if __name__ == "__main__":
    main()
