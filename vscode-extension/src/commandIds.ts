// Generated from dsh_query_server/server/tree/commands.py by `python -m dsh_query_server.devtools.gen_commands`; do not edit.
// Command ids shared by the server, the Neovim client and this extension.

export const OPEN_EVENT = "dshQuery.openEvent";
export const SERVER_PREFIX = "dshQuery.server.";
export const SERVER_MOUNT = "dshQuery.server.mount";
export const SERVER_UNMOUNT = "dshQuery.server.unmount";
export const SERVER_CHECKPOINT = "dshQuery.server.checkpoint";
export const SERVER_STATUS = "dshQuery.server.status";
