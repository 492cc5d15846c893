"""``dsh-query mcp``: the history tools over the Model Context Protocol (tools.md §1)."""
