// Command and view ids: the contract between package.json, the server's node commands and the code.
// The ids the server and the Neovim client share come from the generated commandIds.ts.

import { OPEN_EVENT, SERVER_PREFIX } from "./commandIds";

export const COMMANDS = {
  refresh: "dshQuery.refresh",
  searchSessions: "dshQuery.searchSessions",
  searchInSession: "dshQuery.searchInSession",
  filterSessions: "dshQuery.filterSessions",
  filterEvents: "dshQuery.filterEvents",
  traceSession: "dshQuery.traceSession",
  traceEvent: "dshQuery.traceEvent",
  openEvent: OPEN_EVENT,
  openSurface: "dshQuery.openSurface",
  openRawLog: "dshQuery.openRawLog",
  copySessionId: "dshQuery.copySessionId",
  mountPersistence: "dshQuery.mountPersistence",
  unmountPersistence: "dshQuery.unmountPersistence",
  checkpointNow: "dshQuery.checkpointNow",
  restartServer: "dshQuery.restartServer",
  showOutput: "dshQuery.showOutput",
  showSession: "dshQuery.showSession",
  exportSession: "dshQuery.exportSession",
  groupSessions: "dshQuery.groupSessions",
  openSessionView: "dshQuery.openSessionView",
  openUsageView: "dshQuery.openUsageView",
  showUnreadable: "dshQuery.showUnreadable",
} as const;

const CLIENT_COMMANDS = new Set<string>(Object.values(COMMANDS));

/** Commands a server node may name: ours, and the server's own (registered by the client library). */
export function knownCommand(id: string): boolean {
  return CLIENT_COMMANDS.has(id) || id.startsWith(SERVER_PREFIX);
}

export const VIEW_IDS = {
  sessions: "dshQuery.sessions",
  events: "dshQuery.events",
  trace: "dshQuery.trace",
} as const;
