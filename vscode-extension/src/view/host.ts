// The page's host (docs/views.md §3), and the HTML export's: it answers the page's requests from the
// data embedded in the file. The VS Code webview's host is in webview.ts. The page sees only
// `Host`. No DOM here, so node --test runs it.

import type {
  SessionEvent,
  SessionEventRecord,
  SessionEventWindow,
  SessionHeader,
  SessionLineageTrace,
  SessionSurfaceSnapshot,
  SessionTimeline,
} from "../protocol.gen";
import type { ViewAction, ViewConfig, ViewMethod } from "../viewProtocol";
import { replaySurface } from "./model";

export interface Host {
  readonly config: ViewConfig;
  request<R>(method: ViewMethod, params: Record<string, unknown>): Promise<R>;
  can(action: ViewAction["action"]): boolean;
  act(action: ViewAction): void;
  /** The host asks the page to show an event, or to read everything again. */
  onReveal(listener: (seq: number) => void): void;
  onRefresh(listener: () => void): void;
}

export class HostError extends Error {
  constructor(
    message: string,
    readonly code?: string,
  ) {
    super(message);
  }
}

/** What `dsh-query export --html` embeds: the answers the page would ask a server for. */
export interface EmbeddedData {
  config: ViewConfig;
  session: SessionHeader;
  timeline: SessionTimeline;
  records: SessionEventRecord[];
  events: SessionEvent[];
  lineage?: SessionLineageTrace;
}

/** In the HTML export: the same requests, answered from the embedded log. */
export class EmbeddedHost implements Host {
  readonly config: ViewConfig;

  constructor(private readonly data: EmbeddedData) {
    this.config = data.config;
  }

  async request<R>(method: ViewMethod, params: Record<string, unknown>): Promise<R> {
    return this.answer(method, params) as R;
  }

  private answer(method: ViewMethod, params: Record<string, unknown>): unknown {
    const { data } = this;
    switch (method) {
      case "sessionQuery/readTimeline":
        return data.timeline;
      case "sessionQuery/listEvents":
        return data.records;
      case "sessionQuery/readEvent":
        return this.window(params);
      case "sessionQuery/readSurface": {
        const last = data.events.length - 1;
        const through = typeof params.throughSeq === "number" ? params.throughSeq : last;
        if (through > last) {
          throw new HostError(`no event at seq ${through}`, "SESSION_QUERY_EVENT_NOT_FOUND");
        }
        const snapshot: SessionSurfaceSnapshot = {
          session: data.session,
          capturedThroughSeq: last < 0 ? null : through,
          events: replaySurface(data.events, through).map((s) => data.events[s]),
        };
        return snapshot;
      }
      case "sessionQuery/traceSession":
        if (!data.lineage) {
          throw new HostError("the export holds no lineage");
        }
        return data.lineage;
      case "sessionQuery/readUsage":
        throw new HostError("the export holds no usage"); // the header leaves its usage line out
    }
  }

  private window(params: Record<string, unknown>): SessionEventWindow {
    const { events, session } = this.data;
    const seq = Number(params.seq);
    if (!Number.isSafeInteger(seq) || seq < 0 || seq >= events.length) {
      throw new HostError(`no event at seq ${String(params.seq)}`, "SESSION_QUERY_EVENT_NOT_FOUND");
    }
    const before = Number(params.before ?? 0);
    const after = Number(params.after ?? 0);
    const start = Math.max(0, seq - before);
    const end = Math.min(events.length - 1, seq + after);
    return { session, target: events[seq], events: events.slice(start, end + 1), startSeq: start, endSeq: end };
  }

  can(): boolean {
    return false;
  }

  act(): void {
    // a static page performs no editor actions
  }

  onReveal(): void {
    // nothing asks a static page to move
  }

  onRefresh(): void {
    // the file never changes
  }
}
