// Wire shapes of dsh-query-server that the extension uses (protocol.md, semantics.md §1.8).
// Everything here is data: no `vscode` import, so unit tests load it directly.

export type ServerView = "sessions" | "lineage" | "events" | "eventTrace";

export interface NodeResource {
  sessionId: string;
  seq?: number;
}

export interface NodeCommand {
  title: string;
  command: string;
  arguments?: unknown[];
}

export interface TreeNode {
  id: string;
  label: string;
  description?: string;
  tooltip?: string;
  icon?: string;
  collapsible: "none" | "collapsed" | "expanded";
  contextValue?: string;
  resource?: NodeResource;
  command?: NodeCommand;
}

export interface TreeChildrenResult {
  nodes: TreeNode[];
}

export interface TreeParentResult {
  nodeId?: string;
}

export interface SessionHeader {
  version: number;
  id: string;
  createdAt: number;
  cwd?: string;
  parentSession?: string;
  seedLength?: number;
  origin?: string;
  delegationDepth?: number;
  agentPreset?: string;
  [key: string]: unknown;
}

export interface SessionEvent {
  type: string;
  seq: number;
  time: number;
  data: unknown;
  surfaceOp?: unknown;
  sourceEventSeqs?: number[];
  [key: string]: unknown;
}

export type Surface = "current" | "shadowed" | "log-only";

export interface SessionRecord {
  header: SessionHeader;
  live: boolean;
  persisted: boolean;
}

export interface SessionEventRecord {
  sessionId: string;
  seq: number;
  type: string;
  time: number;
  surface: Surface;
}

export interface SessionEventSearchDocument extends SessionEventRecord {
  text: string;
}

export interface SessionEventWindow {
  session: SessionHeader;
  target: SessionEvent;
  events: SessionEvent[];
  startSeq: number;
  endSeq: number;
}

export interface SessionSurfaceSnapshot {
  session: SessionHeader;
  capturedThroughSeq: number | null;
  events: SessionEvent[];
}

export interface SessionLogSnapshot {
  session: SessionHeader;
  events: SessionEvent[];
}

export interface SessionEventSearchHit extends SessionEventRecord {
  snippet: string;
}

export interface SessionSearchHit extends SessionRecord {
  bestMatch: SessionEventSearchHit;
}

export interface SessionSearchPage<T> {
  items: T[];
  nextCursor?: string;
}

export interface SessionEventSearchPage extends SessionSearchPage<SessionEventSearchHit> {
  session: SessionHeader;
}

export type SessionFilter =
  | { kind: "id" | "availability"; values: string[] }
  | { kind: "cwd" | "parent"; values: (string | null)[] }
  | { kind: "created-at"; from?: number; to?: number };

export type EventFilter =
  | { kind: "type" | "surface"; values: string[] }
  | { kind: "seq" | "time"; from?: number; to?: number }
  | { kind: "text"; text: string };

export interface DidChangeParams {
  sessionIds?: string[];
  corpus?: boolean;
}

export const Methods = {
  listSessions: "sessionQuery/listSessions",
  filterSessions: "sessionQuery/filterSessions",
  listEvents: "sessionQuery/listEvents",
  filterEvents: "sessionQuery/filterEvents",
  readEvent: "sessionQuery/readEvent",
  readSurface: "sessionQuery/readSurface",
  readSession: "sessionQuery/readSession",
  readTitles: "sessionQuery/readTitles",
  traceSession: "sessionQuery/traceSession",
  traceEvent: "sessionQuery/traceEvent",
  searchSessions: "sessionQuery/searchSessions",
  searchEvents: "sessionQuery/searchEvents",
  treeChildren: "sessionQuery/treeChildren",
  treeParent: "sessionQuery/treeParent",
  checkpoint: "sessionStore/checkpoint",
  mount: "sessionPersistence/mount",
  unmount: "sessionPersistence/unmount",
  status: "sessionPersistence/status",
  didChange: "sessionQuery/didChange",
} as const;

/** The one thing the data layer needs from a running server. */
export interface Rpc {
  request<R = unknown>(method: string, params: object): Promise<R>;
}
