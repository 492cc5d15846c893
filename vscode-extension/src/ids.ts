// Command and view ids: the contract between package.json, the server's node commands and the code.

export const COMMANDS = {
  refresh: "dshQuery.refresh",
  searchSessions: "dshQuery.searchSessions",
  searchInSession: "dshQuery.searchInSession",
  filterSessions: "dshQuery.filterSessions",
  filterEvents: "dshQuery.filterEvents",
  traceSession: "dshQuery.traceSession",
  traceEvent: "dshQuery.traceEvent",
  openEvent: "dshQuery.openEvent",
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
} as const;

const CLIENT_COMMANDS = new Set<string>(Object.values(COMMANDS));

/** Commands a server node may name: ours, and the server's own (registered by the client library). */
export function knownCommand(id: string): boolean {
  return CLIENT_COMMANDS.has(id) || id.startsWith("dshQuery.server.");
}

export const VIEW_IDS = {
  sessions: "dshQuery.sessions",
  events: "dshQuery.events",
  trace: "dshQuery.trace",
} as const;
