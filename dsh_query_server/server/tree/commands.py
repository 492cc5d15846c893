"""Command ids shared by the server, the Neovim client and the VS Code extension: the one source.

The editors' copies are generated from this module by ``python -m
dsh_query_server.devtools.gen_commands`` (editor/nvim/lua/dsh_query/commands.lua and
vscode-extension/src/commandIds.ts, both committed); tests/server/tree/test_tree.py fails when they drift.
"""

from __future__ import annotations

from typing import Final

# A tree node's command (protocol.md §6): open the event window of {sessionId, seq}. The server
# names it on event nodes; each client runs it.
OPEN_EVENT: Final = "dshQuery.openEvent"

# Commands the server executes (workspace/executeCommand), one per persistence/checkpoint call.
SERVER_PREFIX: Final = "dshQuery.server."
SERVER_MOUNT: Final = SERVER_PREFIX + "mount"
SERVER_UNMOUNT: Final = SERVER_PREFIX + "unmount"
SERVER_CHECKPOINT: Final = SERVER_PREFIX + "checkpoint"
SERVER_STATUS: Final = SERVER_PREFIX + "status"

# Name -> id, in the order the generated modules list them (same names in Lua and TypeScript).
SHARED: Final[dict[str, str]] = {
    "OPEN_EVENT": OPEN_EVENT,
    "SERVER_PREFIX": SERVER_PREFIX,
    "SERVER_MOUNT": SERVER_MOUNT,
    "SERVER_UNMOUNT": SERVER_UNMOUNT,
    "SERVER_CHECKPOINT": SERVER_CHECKPOINT,
    "SERVER_STATUS": SERVER_STATUS,
}

# The ids the server registers for workspace/executeCommand.
SERVER_COMMANDS: Final = (SERVER_MOUNT, SERVER_UNMOUNT, SERVER_CHECKPOINT, SERVER_STATUS)
