// What a command is about: commands run from the palette (no argument), a view's context menu
// (our tree element), a node's own command (the server's arguments) or other commands.

import type {
  NodeResource,
  SessionEvent,
  SessionEventSearchHit,
  SessionHeader,
  SessionRecord,
  SessionSearchHit,
} from "./protocol";

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

/** The longest title a search hit shows; the tree cuts titles shorter (it has less room). */
export const HIT_TITLE_CHARS = 72;

function cutTitle(text: string, limit: number): string {
  const line = text.replace(/\s+/g, " ").trim();
  if (line.length <= limit) {
    return line;
  }
  const head = line.slice(0, limit - 1);
  const space = head.lastIndexOf(" ");
  return (space >= (limit * 2) / 3 ? head.slice(0, space) : head).replace(/[ ,.;:–—-]+$/, "") + "…";
}

/** The agent that wrote a session (importers.md §0.8 `source.agent`; dsh's headers have none). */
export function agentOf(header: SessionHeader): string {
  const source = header.source;
  if (source && typeof source === "object") {
    const agent = (source as { agent?: unknown }).agent;
    return typeof agent === "string" && agent !== "" ? agent : "unknown";
  }
  return "dsh";
}

/** Events read from the start of an untitled session (after its seed) to find what it was
 *  asked first, as the trees label it (protocol.md §6). */
export const FIRST_MESSAGE_WINDOW = 8;

/** The text of the first `user/message` among `events` (its text blocks, joined). */
export function firstUserText(events: SessionEvent[]): string | undefined {
  for (const e of events) {
    if (e.type !== "user/message" || !e.data || typeof e.data !== "object") {
      continue;
    }
    const content = (e.data as { content?: unknown }).content;
    const texts = Array.isArray(content)
      ? content
          .filter((b): b is { type: "text"; text: string } => !!b && b.type === "text" && typeof b.text === "string")
          .map((b) => b.text)
      : [];
    const text = texts.join(" ").trim();
    if (text !== "") {
      return text;
    }
  }
  return undefined;
}

/**
 * What a session search hit is called: the session's title (readTitles), else its first user
 * message, cut to a line; else "Untitled session in <workspace>"; never its id (a UUID says
 * nothing to a person).
 */
export function hitTitle(header: SessionHeader, title: string | undefined): string {
  if (title !== undefined && title.trim() !== "") {
    return cutTitle(title, HIT_TITLE_CHARS);
  }
  const cwd = typeof header.cwd === "string" ? header.cwd.replace(/\/+$/, "") : "";
  const base = cwd.slice(cwd.lastIndexOf("/") + 1);
  return base ? `Untitled session in ${base}` : "Untitled session";
}

/** `claude-code · 2026-01-01 · #12 user/message · current · persisted`: agent, day, the best
 *  match and where the session lives. */
export function sessionHitDescription(hit: SessionSearchHit): string {
  const at = hit.header.createdAt;
  // Dates end at ±8.64e15 ms; a header may hold any safe integer.
  const day = Number.isFinite(at) && Math.abs(at) <= 8.64e15 ? new Date(at).toISOString().slice(0, 10) : "";
  return [agentOf(hit.header), day, hitDescription(hit.bestMatch), availability(hit)].filter((p) => p).join(" · ");
}
