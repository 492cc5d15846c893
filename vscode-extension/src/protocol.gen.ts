// Generated from the protocol's JSON Schema (dsh_query_server/schema/) by
// `python -m dsh_query_server.devtools.tsgen`. Do not edit: change the schema and regenerate
// (tests/schema/test_schema.py fails while this file differs from what the generator writes).

/** The server assigns ``seq``, and ``time`` (now, epoch ms) when it is absent. */
export interface AppendEvent {
  type: string;
  data: unknown;
  time?: number;
  surfaceOp?: "append" | SurfaceReplace;
  sourceEventSeqs?: number[];
}

export interface AppendParams {
  sessionId: string;
  events: AppendEvent[];
}

export interface AppendResult {
  firstSeq: number;
  lastSeq: number;
}

export type Availability = "live" | "persisted";

export interface AvailabilityFilter {
  kind: "availability";
  values: Availability[];
}

/** One MCP tool call (tools.md §1) as ``dsh-query mcp`` forwards it. */
export interface CallToolParams {
  name: string;
  arguments: { [key: string]: unknown };
  workspace: ToolWorkspace;
  caller?: string | null;
  maxResults?: number;
}

/** One of: ``{text, structured}``; ``{error}``; ``{interrupted: true}`` (the request was cancelled: the MCP side tells its deadline from a cancellation). */
export interface CallToolResult {
  text?: string;
  structured?: { [key: string]: unknown };
  error?: ToolFailure;
  interrupted?: boolean;
}

export interface CheckpointParams {
  sessionId?: string | null;
}

/** Per targeted live session with events: the last seq the backend now holds. */
export interface CheckpointResult {
  flushed: { [key: string]: number };
}

export type Collapsible = "collapsed" | "expanded" | "none";

export interface CreateParams {
  header: SessionHeader;
  seed?: SessionEvent[];
}

export interface CreateResult {
  header: SessionHeader;
}

export interface CreatedAtFilter {
  kind: "created-at";
  from?: number;
  to?: number;
}

export interface CwdFilter {
  kind: "cwd";
  values: (string | null)[];
}

export interface DescendantUsage {
  sessionId: string;
  parentSession: string;
  agent: string;
  total: UsageTotals;
}

export interface DidChangeParams {
  sessionIds?: string[];
  corpus?: true;
}

export type EmptyResult = Record<string, never>;

export type ErrorCode =
  | "SESSION_QUERY_ABORTED"
  | "SESSION_QUERY_CORRUPT_SESSION"
  | "SESSION_QUERY_EVENT_NOT_FOUND"
  | "SESSION_QUERY_EXPORT_FAILED"
  | "SESSION_QUERY_INDEX_FAILED"
  | "SESSION_QUERY_INTERNAL"
  | "SESSION_QUERY_INVALID_CONFIG"
  | "SESSION_QUERY_INVALID_CURSOR"
  | "SESSION_QUERY_INVALID_FILTER"
  | "SESSION_QUERY_INVALID_LIMIT"
  | "SESSION_QUERY_INVALID_LINEAGE"
  | "SESSION_QUERY_INVALID_QUERY"
  | "SESSION_QUERY_INVALID_REQUEST"
  | "SESSION_QUERY_INVALID_SURFACE"
  | "SESSION_QUERY_INVALID_WINDOW"
  | "SESSION_QUERY_PERSISTENCE_FAILED"
  | "SESSION_QUERY_SEARCH_DISABLED"
  | "SESSION_QUERY_SESSION_NOT_FOUND"
  | "SESSION_QUERY_SOURCE_CONFLICT"
  | "SESSION_QUERY_STALE_CURSOR"
  | "SESSION_QUERY_UNAUTHORIZED"
  | "SESSION_STORE_DUPLICATE_SESSION"
  | "SESSION_STORE_INVALID_EVENT"
  | "SESSION_STORE_INVALID_HEADER"
  | "SESSION_STORE_PERSISTENCE_FAILED"
  | "SESSION_STORE_READ_ONLY"
  | "SESSION_STORE_SESSION_NOT_FOUND";

/** ``data`` of every coded JSON-RPC error (protocol.md §2). */
export interface ErrorData {
  code: ErrorCode;
  sessionId?: string;
  seq?: number;
  cause?: string;
}

export type EventFilter = SeqFilter | TimeFilter | TypeFilter | SurfaceFilter | TextFilter;

export interface ExportEntry {
  name: string;
  bytes: number;
  sessionId?: string | null;
  attachmentId?: string | null;
}

/** ``outputPath`` is absolute. Absent or null: ``includeDescendants`` false, ``includeMedia`` true, ``overwrite`` false, no ``workspaceRoots`` (tools.md §2.4). */
export interface ExportParams {
  sessionId: string;
  outputPath: string;
  includeDescendants?: boolean | null;
  includeMedia?: boolean | null;
  overwrite?: boolean | null;
  workspaceRoots?: string[] | null;
}

export interface ExportResult {
  path: string;
  bytes: number;
  entries: ExportEntry[];
}

export interface FallbackTitleSource {
  kind: "fallback";
}

export interface FilterEventsParams {
  sessionId: string;
  filters: EventFilter[];
}

export interface FilterSessionsParams {
  filters: SessionFilter[];
}

/** The configured index path, and the file this hub holds (a slot when another process holds the first, search/ownership.py); ``file`` is null until the index is opened. */
export interface HubIndex {
  path: string;
  file: string | null;
}

/** A hub's process, key, socket and connections, and the resolved configuration it serves (passwords redacted). */
export interface HubStatus {
  pid: number;
  key: string;
  socket: string;
  startedAt: number;
  connections: number;
  uptimeMs: number;
  config: { [key: string]: unknown };
  index: HubIndex;
  version: string;
  tcp?: HubTcp;
  mountFailure?: MountFailure;
}

/** ``{}``: the hub answers, then leaves as on SIGTERM. */
export type HubStopped = Record<string, never>;

/** With ``--tcp``: where the hub listens and the file holding the token a client presents. */
export interface HubTcp {
  host: string;
  port: number;
  tokenFile: string;
}

export interface IdFilter {
  kind: "id";
  values: string[];
}

/** One model's part of a time group's row. */
export interface ModelShare {
  model: string | null;
  total: UsageTotals;
}

/** Why the configured persistence is not mounted: the hub could not mount it when it started (the mount's code and message; the hub then serves live sessions alone). */
export interface MountFailure {
  code: string;
  message: string;
}

/** ``"auto"``, one URI, or an array of 1-16 distinct URIs mounted as one (importers.md §4.3). */
export interface MountParams {
  uri: string | string[];
}

/** ``uri`` echoes what was mounted; ``members`` lists the mounted backends in order. */
export interface MountResult {
  uri: string | string[];
  writable: boolean;
  members: PersistenceMember[];
}

export type NoParams = Record<string, never>;

export interface ParentFilter {
  kind: "parent";
  values: (string | null)[];
}

/** The counted response with the largest recorded prompt (the earliest on a tie). */
export interface PeakContext {
  seq: number;
  context: number;
}

export interface PersistenceMember {
  uri: string;
  writable: boolean;
  postgres?: PostgresMemberStatus;
}

/** A ``postgres:`` member's connection (postgres.md §1.4); ``lastError`` is scrubbed. */
export interface PostgresMemberStatus {
  reachable: boolean;
  notifications: "listening" | "off" | "polling" | "reconnecting";
  lastError?: string;
}

export interface ProviderTitleSource {
  kind: "provider";
  provider: string;
  model?: { [key: string]: unknown };
}

/** ``seq`` is any number: one that names no event is EVENT_NOT_FOUND (semantics.md §3.0.2). ``before`` and ``after`` are integers from 0 to ``readWindowMax`` (INVALID_WINDOW). */
export interface ReadEventParams {
  sessionId: string;
  seq: number;
  before?: number;
  after?: number;
}

/** ``log``: also the whole log, as readSession gives it (absent or null: false). */
export interface ReadSessionViewParams {
  sessionId: string;
  log?: boolean | null;
}

/** ``throughSeq``: the surface after events 0..throughSeq (views.md §1); absent or null, the current surface. Checked after sessionId, before the load (semantics.md §3.12). */
export interface ReadSurfaceParams {
  sessionId: string;
  throughSeq?: number | null;
}

export interface ReadTitlesParams {
  sessionIds: string[];
}

/** ``includeDescendants``: also every descendant session's totals, and all of them summed (usage.md §1). Null is absent. */
export interface ReadUsageParams {
  sessionId: string;
  includeDescendants?: boolean | null;
}

/** The usage the agent recorded for one response, normalised (views.md §2); a field the source does not record is null. ``context`` is the whole prompt as the provider counted it. */
export interface RecordedUsage {
  input: number | null;
  cacheRead: number | null;
  cacheWrite: number | null;
  output: number | null;
  reasoning: number | null;
  context: number | null;
}

export interface RejectionReason {
  code: ErrorCode;
  message: string;
  cause?: string;
}

/** A method of the server's table and its params; ``titles`` (with a session listing): each record with ``title``, the session's current title where it has a non-blank one, as ``dsh-query sessions --json`` prints it. */
export interface RenderParams {
  method: string;
  params?: { [key: string]: unknown };
  titles?: boolean;
}

export type ReplacementKind = "compaction" | "tool-result-rewrite";

export type SearchEventFilter = SeqFilter | TimeFilter | TypeFilter | SurfaceFilter;

export interface SeqFilter {
  kind: "seq";
  from?: number;
  to?: number;
}

export type ServerView = "eventTrace" | "events" | "lineage" | "sessions";

/** semantics.md §1.3; ``data`` is any JSON value, ``null`` included. */
export interface SessionEvent {
  type: string;
  seq: number;
  time: number;
  data: unknown;
  surfaceOp?: "append" | SurfaceReplace;
  sourceEventSeqs?: number[];
  ignorable?: true;
  [key: string]: unknown;
}

export interface SessionEventRecord {
  sessionId: string;
  seq: number;
  type: string;
  time: number;
  surface: Surface;
}

export interface SessionEventSearchDocument {
  sessionId: string;
  seq: number;
  type: string;
  time: number;
  surface: Surface;
  text: string;
}

export interface SessionEventSearchHit {
  sessionId: string;
  seq: number;
  type: string;
  time: number;
  surface: Surface;
  snippet: string;
}

export interface SessionEventSearchPage {
  session: SessionHeader;
  items: SessionEventSearchHit[];
  nextCursor?: string;
}

export interface SessionEventSearchRequest {
  sessionId: string;
  query: string;
  filters?: SearchEventFilter[];
  limit?: number;
  cursor?: string;
}

export interface SessionEventTraceObservation {
  target: SessionEventRecord;
  replacementChain: number[];
  replacedEventSeqs: number[];
  sourceEventSeqs: number[];
  derivedEventSeqs: number[];
  session: SessionHeader;
  replacedBy?: number;
}

export interface SessionEventWindow {
  session: SessionHeader;
  target: SessionEvent;
  events: SessionEvent[];
  startSeq: number;
  endSeq: number;
}

export type SessionFilter = IdFilter | CwdFilter | ParentFilter | AvailabilityFilter | CreatedAtFilter;

/** semantics.md §1.2; unknown extra keys are kept and returned unchanged. */
export interface SessionHeader {
  version: number;
  id: string;
  createdAt: number;
  cwd?: string;
  parentSession?: string;
  seedLength?: number;
  origin?: "subagent";
  delegationDepth?: number;
  agentPreset?: string;
  [key: string]: unknown;
}

export interface SessionIdParams {
  sessionId: string;
}

export interface SessionLineageNode {
  session: SessionRecord;
  descendants: SessionLineageNode[];
}

export interface SessionLineageTrace {
  target: SessionRecord;
  ancestors: SessionRecord[];
  descendants: SessionLineageNode[];
  complete: boolean;
  root?: SessionRecord;
  unresolvedParentId?: string;
}

export interface SessionLogSnapshot {
  session: SessionHeader;
  events: SessionEvent[];
}

export interface SessionRecord {
  header: SessionHeader;
  live: boolean;
  persisted: boolean;
}

export interface SessionSearchHit {
  header: SessionHeader;
  live: boolean;
  persisted: boolean;
  bestMatch: SessionEventSearchHit;
}

export interface SessionSearchPage {
  items: SessionSearchHit[];
  nextCursor?: string;
  unreadable?: UnreadableSession[];
  unreadableCount?: number;
}

export interface SessionSearchRequest {
  query: string;
  sessionFilters?: SessionFilter[];
  eventFilters?: SearchEventFilter[];
  limit?: number;
  cursor?: string;
}

export interface SessionSurfaceSnapshot {
  session: SessionHeader;
  capturedThroughSeq: number | null;
  events: SessionEvent[];
}

export interface SessionTimeline {
  session: SessionHeader;
  capturedThroughSeq: number | null;
  contextWindow: number | null;
  steps: TimelineStep[];
  replacements: TimelineReplacement[];
  peak: TimelinePeak | null;
}

export interface SessionTitleObservation {
  session: SessionHeader;
  title?: SessionTitleSnapshot;
}

export interface SessionTitleObservationResult {
  sessionId: string;
  status: TitleStatus;
  value?: SessionTitleObservation;
  reason?: RejectionReason;
}

export interface SessionTitleSnapshot {
  title: string;
  messageSeqs: number[];
  source: TitleSource;
  eventSeq: number;
  updatedAt: number;
}

export interface SessionUsage {
  session: SessionHeader;
  agent: string;
  seedResponses: number;
  steps: UsageStep[];
  peakContext: PeakContext | null;
  total: UsageTotals;
  prices: string;
  descendants?: DescendantUsage[];
  withDescendants?: UsageTotals;
  skipped?: SkippedSession[];
}

/** ``readTimeline``'s, ``listEvents``' and ``readTitle``'s answers (the title as a ``readTitles`` entry: a malformed title is its rejection, not the view's), and with ``log: true`` ``readSession``'s events. */
export interface SessionView {
  timeline: SessionTimeline;
  events: SessionEventRecord[];
  title: SessionTitleObservationResult;
  log?: SessionEvent[];
}

/** What a replacement shadowed: how many events, the first and last in surface order. */
export interface ShadowedSpan {
  count: number;
  firstSeq: number;
  lastSeq: number;
}

/** A session left out of a total because it could not be read, with the error it gave. */
export interface SkippedSession {
  sessionId: string;
  code: ErrorCode;
  message: string;
}

export interface StatusResult {
  uri: string | string[] | null;
  writable: boolean;
  pendingEvents: number;
  members: PersistenceMember[];
  unreadable?: UnreadableSession[];
  unreadableCount?: number;
}

export type Surface = "current" | "log-only" | "shadowed";

export interface SurfaceFilter {
  kind: "surface";
  values: Surface[];
}

export interface SurfaceReplace {
  op: "replace";
  start: number;
  end: number;
}

/** A surface measured (views.md §2): its events, the code points of their text (semantics.md §6.4) and ``ceil(chars / 4)``, an estimate every view labels "≈ tokens". */
export interface SurfaceSize {
  events: number;
  chars: number;
  approxTokens: number;
}

export type SurfaceType = "assistant/message" | "tool/result" | "user/message";

export interface TextFilter {
  kind: "text";
  text: string;
}

export interface TimeFilter {
  kind: "time";
  from?: number;
  to?: number;
}

/** The step with the largest ``approxTokens`` (the earliest on a tie). */
export interface TimelinePeak {
  seq: number;
  approxTokens: number;
  recordedContext: number | null;
}

/** One ``replace`` surface op: ``before`` is the surface through ``seq - 1``, ``after`` through ``seq``. */
export interface TimelineReplacement {
  seq: number;
  time: number;
  type: SurfaceType;
  kind: ReplacementKind;
  shadowed: ShadowedSpan;
  before: SurfaceSize;
  after: SurfaceSize;
}

/** One model response: the ``assistant/message`` at ``seq``, and the surface before it. */
export interface TimelineStep {
  seq: number;
  time: number;
  turn: number | null;
  step: number | null;
  model: string | null;
  surface: SurfaceSize;
  recorded: RecordedUsage | null;
}

export type TitleSource = FallbackTitleSource | UserTitleSource | ProviderTitleSource;

export type TitleStatus = "fulfilled" | "rejected";

/** The tool's sanitized error (tools.md §1.10). */
export interface ToolFailure {
  code: string;
  message: string;
}

/** The MCP side's workspace after its workspace step (tools.md §1.2). */
export interface ToolWorkspace {
  roots: string[];
  base: string;
  source?: string;
}

export interface TraceEventParams {
  sessionId: string;
  seq: number;
}

export interface TreeArgs {
  sessionId?: string;
  seq?: number;
  groupBy?: TreeGrouping;
}

/** Without ``nodeId`` (or with null): the view's roots, for which ``args`` holds what the view needs (protocol.md §6). */
export interface TreeChildrenParams {
  view: ServerView;
  nodeId?: string | null;
  args?: TreeArgs;
}

export interface TreeChildrenResult {
  nodes: TreeNode[];
}

export interface TreeCommand {
  title: string;
  command: string;
  arguments?: TreeResource[];
}

export type TreeGrouping = "agent" | "none" | "workspace";

/** protocol.md §6 ``TreeNode``; absent optional keys are omitted. ``collapsible`` has no default so it is always sent. */
export interface TreeNode {
  id: string;
  label: string;
  collapsible: Collapsible;
  description?: string;
  tooltip?: string;
  icon?: string;
  contextValue?: string;
  resource?: TreeResource;
  command?: TreeCommand;
  agent?: string;
  surface?: Surface;
}

export interface TreeParentParams {
  view: ServerView;
  nodeId: string;
}

export interface TreeParentResult {
  nodeId?: string;
}

export interface TreeResource {
  sessionId: string;
  seq?: number;
}

export interface TypeFilter {
  kind: "type";
  values: string[];
}

/** One entry of a result's ``unreadable`` list: the failure's own code, a message that names the damaged file or row, and the file (when there is one). */
export interface UnreadableSession {
  sessionId: string;
  code: string;
  message: string;
  path?: string;
}

/** One group of ``usageSummary``: its key (usage.md §4.1) and its totals; a time group's row also splits them by model (``byModel``, most tokens first). */
export interface UsageRow {
  key: string | null;
  total: UsageTotals;
  byModel?: ModelShare[];
}

/** One counted model response (usage.md §2): the ``assistant/message`` at ``seq`` that carries the response's recorded usage (views.md §2 ``recorded``). */
export interface UsageStep {
  seq: number;
  time: number;
  model: string | null;
  input: number | null;
  cacheRead: number | null;
  cacheWrite: number | null;
  output: number | null;
  reasoning: number | null;
  context: number | null;
  costUsd: string | null;
  priceSource: string | null;
}

export interface UsageSummary {
  groupBy: string;
  timeZone: string;
  since: number | null;
  until: number | null;
  rows: UsageRow[];
  total: UsageTotals;
  skipped: SkippedSession[];
  prices: string;
}

/** ``since`` / ``until``: epoch milliseconds, a response counts when ``since <= time < until``; ``timeZone``: an IANA name for the day, week and month groups (default UTC). The filters are checked by the service, after these (semantics.md §3.12). */
export interface UsageSummaryParams {
  groupBy: "agent" | "cwd" | "day" | "model" | "month" | "session" | "week";
  since?: number | null;
  until?: number | null;
  timeZone?: string | null;
  filters?: SessionFilter[];
}

/** Counted responses summed (usage.md §2.5): a count is null when no response recorded it; ``costUsd`` sums the priced responses, null when none was priced; the others are ``unpricedResponses``, their models in ``unpricedModels``. */
export interface UsageTotals {
  sessions: number;
  responses: number;
  input: number | null;
  cacheRead: number | null;
  cacheWrite: number | null;
  output: number | null;
  reasoning: number | null;
  costUsd: string | null;
  unpricedResponses: number;
  unpricedModels: string[];
  models: string[];
}

export interface UserTitleSource {
  kind: "user";
}

/** Params and result of every request, by method name: `request()` is typed by it. */
export interface Requests {
  "hub/callTool": { params: CallToolParams; result: CallToolResult };
  "hub/render": { params: RenderParams; result: unknown };
  "hub/status": { params: NoParams; result: HubStatus };
  "hub/stop": { params: NoParams; result: HubStopped };
  "sessionPersistence/mount": { params: MountParams; result: MountResult };
  "sessionPersistence/status": { params: NoParams; result: StatusResult };
  "sessionPersistence/unmount": { params: NoParams; result: EmptyResult };
  "sessionQuery/exportSession": { params: ExportParams; result: ExportResult };
  "sessionQuery/filterEvents": { params: FilterEventsParams; result: SessionEventSearchDocument[] };
  "sessionQuery/filterSessions": { params: FilterSessionsParams; result: SessionRecord[] };
  "sessionQuery/listEvents": { params: SessionIdParams; result: SessionEventRecord[] };
  "sessionQuery/listSessions": { params: NoParams; result: SessionRecord[] };
  "sessionQuery/readEvent": { params: ReadEventParams; result: SessionEventWindow };
  "sessionQuery/readSession": { params: SessionIdParams; result: SessionLogSnapshot };
  "sessionQuery/readSessionView": { params: ReadSessionViewParams; result: SessionView };
  "sessionQuery/readSurface": { params: ReadSurfaceParams; result: SessionSurfaceSnapshot };
  "sessionQuery/readTimeline": { params: SessionIdParams; result: SessionTimeline };
  "sessionQuery/readTitle": { params: SessionIdParams; result: SessionTitleObservation };
  "sessionQuery/readTitles": { params: ReadTitlesParams; result: SessionTitleObservationResult[] };
  "sessionQuery/readUsage": { params: ReadUsageParams; result: SessionUsage };
  "sessionQuery/searchEvents": { params: SessionEventSearchRequest; result: SessionEventSearchPage };
  "sessionQuery/searchSessions": { params: SessionSearchRequest; result: SessionSearchPage };
  "sessionQuery/traceEvent": { params: TraceEventParams; result: SessionEventTraceObservation };
  "sessionQuery/traceSession": { params: SessionIdParams; result: SessionLineageTrace };
  "sessionQuery/treeChildren": { params: TreeChildrenParams; result: TreeChildrenResult };
  "sessionQuery/treeParent": { params: TreeParentParams; result: TreeParentResult };
  "sessionQuery/usageSummary": { params: UsageSummaryParams; result: UsageSummary };
  "sessionStore/append": { params: AppendParams; result: AppendResult };
  "sessionStore/checkpoint": { params: CheckpointParams; result: CheckpointResult };
  "sessionStore/create": { params: CreateParams; result: CreateResult };
  "sessionStore/remove": { params: SessionIdParams; result: EmptyResult };
}

/** Params of every notification, by method name. */
export interface NotificationMap {
  "sessionQuery/didChange": DidChangeParams;
}

export type ErrorDataShape = ErrorData;

/** The JSON-RPC error number each coded failure is answered with. */
export const ERROR_RPC_CODES: Readonly<Record<ErrorCode, number>> = {
  SESSION_QUERY_ABORTED: -32800,
  SESSION_QUERY_CORRUPT_SESSION: -32803,
  SESSION_QUERY_EVENT_NOT_FOUND: -32803,
  SESSION_QUERY_EXPORT_FAILED: -32803,
  SESSION_QUERY_INDEX_FAILED: -32803,
  SESSION_QUERY_INTERNAL: -32603,
  SESSION_QUERY_INVALID_CONFIG: -32602,
  SESSION_QUERY_INVALID_CURSOR: -32602,
  SESSION_QUERY_INVALID_FILTER: -32602,
  SESSION_QUERY_INVALID_LIMIT: -32602,
  SESSION_QUERY_INVALID_LINEAGE: -32803,
  SESSION_QUERY_INVALID_QUERY: -32602,
  SESSION_QUERY_INVALID_REQUEST: -32602,
  SESSION_QUERY_INVALID_SURFACE: -32803,
  SESSION_QUERY_INVALID_WINDOW: -32602,
  SESSION_QUERY_PERSISTENCE_FAILED: -32803,
  SESSION_QUERY_SEARCH_DISABLED: -32803,
  SESSION_QUERY_SESSION_NOT_FOUND: -32803,
  SESSION_QUERY_SOURCE_CONFLICT: -32803,
  SESSION_QUERY_STALE_CURSOR: -32803,
  SESSION_QUERY_UNAUTHORIZED: -32600,
  SESSION_STORE_DUPLICATE_SESSION: -32803,
  SESSION_STORE_INVALID_EVENT: -32602,
  SESSION_STORE_INVALID_HEADER: -32602,
  SESSION_STORE_PERSISTENCE_FAILED: -32803,
  SESSION_STORE_READ_ONLY: -32803,
  SESSION_STORE_SESSION_NOT_FOUND: -32803,
};

/** Server-side `workspace/executeCommand` ids and the request each one runs. */
export const SERVER_COMMANDS = {
  "dshQuery.server.mount": "sessionPersistence/mount",
  "dshQuery.server.status": "sessionPersistence/status",
  "dshQuery.server.unmount": "sessionPersistence/unmount",
  "dshQuery.server.checkpoint": "sessionStore/checkpoint",
} as const;
