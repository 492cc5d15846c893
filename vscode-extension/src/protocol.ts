// Wire shapes of dsh-query-server that the extension uses (docs/protocol.md, docs/semantics.md
// §1.8). The shapes themselves are generated from the server's JSON Schema into protocol.gen.ts
// (`python -m dsh_query_server.devtools.tsgen`; tests/schema/test_schema.py checks that file for
// drift); this module names the ones the extension imports and adds what is the client's own.
// Everything here is data: no `vscode` import, so unit tests load it directly.

import type { NotificationMap, Requests, TreeCommand, TreeResource } from "./protocol.gen";

export type {
  Availability,
  DidChangeParams,
  ErrorCode,
  ErrorData,
  EventFilter,
  NotificationMap,
  Requests,
  ServerView,
  SessionEvent,
  SessionEventRecord,
  SessionEventSearchDocument,
  SessionEventSearchHit,
  SessionEventSearchPage,
  SessionEventSearchRequest,
  SessionEventWindow,
  SessionFilter,
  SessionHeader,
  SessionLogSnapshot,
  SessionRecord,
  SessionSearchHit,
  SessionSearchPage,
  SessionSearchRequest,
  SessionSurfaceSnapshot,
  SessionTimeline,
  SessionTitleObservationResult,
  Surface,
  TreeChildrenParams,
  TreeChildrenResult,
  TreeGrouping,
  TreeNode,
  TreeParentParams,
  TreeParentResult,
  UnreadableSession,
} from "./protocol.gen";
export { ERROR_RPC_CODES, SERVER_COMMANDS } from "./protocol.gen";

export type NodeResource = TreeResource;
export type NodeCommand = TreeCommand;

export const Methods = {
  listSessions: "sessionQuery/listSessions",
  filterSessions: "sessionQuery/filterSessions",
  listEvents: "sessionQuery/listEvents",
  filterEvents: "sessionQuery/filterEvents",
  readEvent: "sessionQuery/readEvent",
  readSurface: "sessionQuery/readSurface",
  readTimeline: "sessionQuery/readTimeline",
  readSession: "sessionQuery/readSession",
  readTitles: "sessionQuery/readTitles",
  traceSession: "sessionQuery/traceSession",
  traceEvent: "sessionQuery/traceEvent",
  searchSessions: "sessionQuery/searchSessions",
  searchEvents: "sessionQuery/searchEvents",
  exportSession: "sessionQuery/exportSession",
  treeChildren: "sessionQuery/treeChildren",
  treeParent: "sessionQuery/treeParent",
  checkpoint: "sessionStore/checkpoint",
  mount: "sessionPersistence/mount",
  unmount: "sessionPersistence/unmount",
  status: "sessionPersistence/status",
  didChange: "sessionQuery/didChange",
} as const satisfies Record<string, keyof Requests | keyof NotificationMap>;

/** A request's method name, and its params and result as the server's schema states them. */
export type Method = keyof Requests;
export type Params<M extends Method> = Requests[M]["params"];
export type Result<M extends Method> = Requests[M]["result"];

/** The one thing the data layer needs from a running server: a request typed by its method. */
export interface Rpc {
  request<M extends Method>(method: M, params: Params<M>): Promise<Result<M>>;
}
