// What a command is about: commands run from the palette (no argument), a view's context menu
// (our tree element), a node's own command (the server's arguments) or other commands.

import type { NodeResource, SessionEventSearchHit, SessionRecord } from "./protocol";

export interface SessionRef {
  sessionId: string;
  seq?: number;
}

function fromResource(r: unknown): SessionRef | undefined {
  if (r && typeof r === "object") {
    const res = r as Partial<NodeResource>;
    if (typeof res.sessionId === "string") {
      const ref: SessionRef = { sessionId: res.sessionId };
      if (typeof res.seq === "number" && Number.isSafeInteger(res.seq) && res.seq >= 0) {
        ref.seq = res.seq;
      }
      return ref;
    }
  }
  return undefined;
}

export function refFromArgs(args: unknown[]): SessionRef | undefined {
  const [first, second] = args;
  if (typeof first === "string") {
    const ref: SessionRef = { sessionId: first };
    if (typeof second === "number" && Number.isSafeInteger(second) && second >= 0) {
      ref.seq = second;
    }
    return ref;
  }
  if (first && typeof first === "object") {
    const o = first as { node?: { resource?: unknown }; resource?: unknown; header?: { id?: unknown } };
    return (
      fromResource(o.node?.resource) ??
      fromResource(o.resource) ??
      fromResource(first) ??
      (typeof o.header?.id === "string" ? { sessionId: o.header.id } : undefined)
    );
  }
  return undefined;
}

export function sessionLabel(record: SessionRecord): string {
  return record.header.id;
}

export function availability(record: { live: boolean; persisted: boolean }): string {
  if (record.live && record.persisted) {
    return "live + persisted";
  }
  return record.live ? "live" : record.persisted ? "persisted" : "gone";
}

export function hitDescription(hit: SessionEventSearchHit): string {
  return `#${hit.seq} ${hit.type} · ${hit.surface}`;
}
