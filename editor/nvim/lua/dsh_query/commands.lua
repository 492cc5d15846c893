-- Generated from dsh_query_server/server/tree/commands.py by `python -m dsh_query_server.devtools.gen_commands`; do not edit.
-- Command ids shared by the server, this client and the VS Code extension.
return {
  OPEN_EVENT = "dshQuery.openEvent",
  SERVER_PREFIX = "dshQuery.server.",
  SERVER_MOUNT = "dshQuery.server.mount",
  SERVER_UNMOUNT = "dshQuery.server.unmount",
  SERVER_CHECKPOINT = "dshQuery.server.checkpoint",
  SERVER_STATUS = "dshQuery.server.status",
}
