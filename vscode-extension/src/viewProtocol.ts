// The session view's messages (docs/views.md §3): the page asks its host for method results
// (request(method, params) -> result) and asks it to do things only an editor can (actions). The
// VS Code webview and the HTML export are two hosts of the same page. No `vscode`, no DOM.

import type { SessionEventRecord, Surface } from "./protocol.gen";

/** The methods the page may call: read-only, one session at a time. */
export const VIEW_METHODS = [
  "sessionQuery/readTimeline",
  "sessionQuery/listEvents",
  "sessionQuery/readEvent",
  "sessionQuery/readSurface",
  "sessionQuery/traceSession",
  "sessionQuery/readUsage",
] as const;

export type ViewMethod = (typeof VIEW_METHODS)[number];

/** What the Usage page (docs/usage.md §5) may call: the corpus' totals and its sessions' titles. */
export const USAGE_METHODS = ["sessionQuery/usageSummary", "sessionQuery/readTitles"] as const;

export type UsageMethod = (typeof USAGE_METHODS)[number];

export function isUsageMethod(value: unknown): value is UsageMethod {
  return typeof value === "string" && (USAGE_METHODS as readonly string[]).includes(value);
}

/** The Usage page's messages: requests as the session page's, and one action. */
export type UsagePageToHost =
  | { type: "request"; id: number; method: UsageMethod; params: Record<string, unknown> }
  | { type: "action"; request: { action: "openSession"; sessionId: string } }
  | { type: "ready" };

/** The Usage page's start-up configuration. */
export interface UsageConfig {
  /** The IANA zone of the days (the editor's). */
  timeZone: string;
}

export function isViewMethod(value: unknown): value is ViewMethod {
  return typeof value === "string" && (VIEW_METHODS as readonly string[]).includes(value);
}

/** What the page asks an editor host to do; a host without the ability hides the control. */
export type ViewAction =
  | { action: "traceEvent"; sessionId: string; seq: number }
  | { action: "traceSession"; sessionId: string }
  | { action: "openSession"; sessionId: string }
  | { action: "openLink"; href: string };

export interface ViewRequest {
  type: "request";
  id: number;
  method: ViewMethod;
  params: Record<string, unknown>;
}

export interface ViewResponse {
  type: "response";
  id: number;
  result?: unknown;
  error?: { message: string; code?: string };
}

export interface ViewActionMessage {
  type: "action";
  request: ViewAction;
}

/** The host telling the page to show an event (opened from a search hit or a tree node). */
export interface ViewReveal {
  type: "reveal";
  seq: number;
}

export type PageToHost = ViewRequest | ViewActionMessage | { type: "ready" };
export type HostToPage = ViewResponse | ViewReveal | { type: "refresh" };

/** The page's start-up configuration, written into its HTML by the host. */
export interface ViewConfig {
  sessionId: string;
  /** The largest before/after of a readEvent window (the server's readWindowMax). */
  windowMax: number;
  /** The event to show first, if any. */
  reveal?: number;
  /** Which actions the host can perform. */
  actions: ViewAction["action"][];
}

export function isViewAction(value: unknown): value is ViewAction {
  if (!value || typeof value !== "object") {
    return false;
  }
  const v = value as Record<string, unknown>;
  const id = typeof v.sessionId === "string";
  switch (v.action) {
    case "traceEvent":
      return id && typeof v.seq === "number" && Number.isSafeInteger(v.seq) && v.seq >= 0;
    case "traceSession":
    case "openSession":
      return id;
    case "openLink":
      return typeof v.href === "string" && /^https?:\/\//i.test(v.href);
    default:
      return false;
  }
}

/** listEvents as it crosses from the extension into the webview: columns instead of 100,000
 * objects (the copy between the two processes is most of the time of a long session's first
 * screen). The page's host unpacks it into the method's own result. */
export interface PackedRecords {
  packed: "records";
  sessionId: string;
  types: string[];
  /** Per seq: the index of its type in ``types``. */
  type: number[];
  time: number[];
  /** Per seq, one letter: c(urrent), s(hadowed), l(og-only). */
  surface: string;
}

const LETTER: Record<Surface, string> = { current: "c", shadowed: "s", "log-only": "l" };
const SURFACE: Record<string, Surface> = { c: "current", s: "shadowed", l: "log-only" };

export function packRecords(sessionId: string, records: readonly SessionEventRecord[]): PackedRecords {
  const index = new Map<string, number>();
  const types: string[] = [];
  const type = new Array<number>(records.length);
  const time = new Array<number>(records.length);
  let surface = "";
  records.forEach((r, i) => {
    let k = index.get(r.type);
    if (k === undefined) {
      k = types.length;
      types.push(r.type);
      index.set(r.type, k);
    }
    type[i] = k;
    time[i] = r.time;
    surface += LETTER[r.surface];
  });
  return { packed: "records", sessionId, types, type, time, surface };
}

export function isPackedRecords(value: unknown): value is PackedRecords {
  return !!value && typeof value === "object" && (value as { packed?: unknown }).packed === "records";
}

export function unpackRecords(p: PackedRecords): SessionEventRecord[] {
  const out = new Array<SessionEventRecord>(p.type.length);
  for (let seq = 0; seq < out.length; seq++) {
    out[seq] = { sessionId: p.sessionId, seq, type: p.types[p.type[seq]], time: p.time[seq], surface: SURFACE[p.surface[seq]] };
  }
  return out;
}
