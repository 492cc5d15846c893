// A small filter language for the Filter Sessions… / Filter Events… input boxes, compiled to the
// server's filter objects (semantics.md §4). Pure, so it is unit-tested directly.
//
// Sessions:  live persisted cwd:/abs/path cwd:- created:2024-05-01..2024-05-31 parent:ID root id:ID
// Events:    current shadowed log-only surface:a,b type:user/message,tool/result seq:3..9 text:"a b"
//            and bare words, which become one literal text clause.

import type { Availability, EventFilter, SessionFilter, Surface } from "./protocol";

export const SESSION_FILTER_HELP =
  'live persisted cwd:/path cwd:- created:2024-05-01..2024-05-31 parent:ID root id:ID (dates UTC or epoch ms; quote values with spaces)';
export const EVENT_FILTER_HELP =
  'current shadowed log-only type:user/message,tool/result seq:10..20 text:"words" (bare words are text)';

export interface Parsed<T> {
  filters: T[];
  error?: string;
}

/** Splits on whitespace, keeping "double quoted" parts (with \" and \\ escapes) together. */
export function tokenize(input: string): string[] {
  const tokens: string[] = [];
  let current = "";
  let inToken = false;
  let quoted = false;
  for (let i = 0; i < input.length; i++) {
    const c = input[i];
    if (quoted) {
      if (c === "\\" && i + 1 < input.length && (input[i + 1] === '"' || input[i + 1] === "\\")) {
        current += input[++i];
      } else if (c === '"') {
        quoted = false;
      } else {
        current += c;
      }
    } else if (c === '"') {
      quoted = true;
      inToken = true;
    } else if (/\s/.test(c)) {
      if (inToken) {
        tokens.push(current);
        current = "";
        inToken = false;
      }
    } else {
      current += c;
      inToken = true;
    }
  }
  if (quoted) {
    throw new Error("unterminated quote");
  }
  if (inToken) {
    tokens.push(current);
  }
  return tokens;
}

const DAY_MS = 86_400_000;

/** A time bound: epoch ms, `YYYY-MM-DD` (UTC day; `end` selects its last millisecond) or ISO. */
export function parseTime(text: string, end: boolean): number {
  if (/^-?\d+$/.test(text)) {
    return Number(text);
  }
  if (/^\d{4}-\d{2}-\d{2}$/.test(text)) {
    const start = Date.parse(text + "T00:00:00Z");
    if (Number.isNaN(start)) {
      throw new Error(`bad date "${text}"`);
    }
    return end ? start + DAY_MS - 1 : start;
  }
  const t = Date.parse(text);
  if (Number.isNaN(t)) {
    throw new Error(`bad time "${text}" (use YYYY-MM-DD, an ISO time or epoch ms)`);
  }
  return t;
}

export function parseRange(text: string, time: boolean): { from?: number; to?: number } {
  const parse = (s: string, end: boolean): number => {
    if (time) {
      return parseTime(s, end);
    }
    if (!/^-?\d+(\.\d+)?$/.test(s)) {
      throw new Error(`bad number "${s}"`);
    }
    return Number(s);
  };
  const range: { from?: number; to?: number } = {};
  const sep = text.indexOf("..");
  if (sep < 0) {
    // a single value: a whole day for a date, otherwise exactly that value
    range.from = parse(text, false);
    range.to = parse(text, true);
  } else {
    const a = text.slice(0, sep);
    const b = text.slice(sep + 2);
    if (a !== "") {
      range.from = parse(a, false);
    }
    if (b !== "") {
      range.to = parse(b, true);
    }
  }
  if (range.from !== undefined && range.to !== undefined && range.from > range.to) {
    throw new Error(`empty range "${text}"`);
  }
  return range;
}

function splitKey(token: string): [string, string] | undefined {
  const colon = token.indexOf(":");
  if (colon <= 0) {
    return undefined;
  }
  return [token.slice(0, colon).toLowerCase(), token.slice(colon + 1)];
}

function list(value: string): string[] {
  return value.split(",").filter((v) => v !== "");
}

export function parseSessionFilters(input: string): Parsed<SessionFilter> {
  try {
    const availability = new Set<Availability>();
    const cwd: (string | null)[] = [];
    const parent: (string | null)[] = [];
    const ids: string[] = [];
    const filters: SessionFilter[] = [];
    for (const token of tokenize(input)) {
      const lower = token.toLowerCase();
      if (lower === "live" || lower === "persisted") {
        availability.add(lower);
        continue;
      }
      if (lower === "root" || lower === "roots") {
        parent.push(null);
        continue;
      }
      const kv = splitKey(token);
      if (!kv) {
        throw new Error(`unknown term "${token}"`);
      }
      const [key, value] = kv;
      switch (key) {
        case "availability":
        case "is":
          for (const v of list(value.toLowerCase())) {
            if (v !== "live" && v !== "persisted") {
              throw new Error(`availability is live or persisted, not "${v}"`);
            }
            availability.add(v);
          }
          break;
        case "cwd":
          cwd.push(value === "-" ? null : value);
          break;
        case "parent":
          parent.push(value === "-" ? null : value);
          break;
        case "id":
          ids.push(value);
          break;
        case "created":
        case "created-at":
          filters.push({ kind: "created-at", ...parseRange(value, true) });
          break;
        default:
          throw new Error(`unknown filter "${key}:"`);
      }
    }
    const out: SessionFilter[] = [];
    if (availability.size > 0) {
      out.push({ kind: "availability", values: [...availability] });
    }
    if (ids.length > 0) {
      out.push({ kind: "id", values: ids });
    }
    if (cwd.length > 0) {
      out.push({ kind: "cwd", values: cwd });
    }
    if (parent.length > 0) {
      out.push({ kind: "parent", values: parent });
    }
    return { filters: [...out, ...filters] };
  } catch (err) {
    return { filters: [], error: (err as Error).message };
  }
}

const SURFACES: ReadonlySet<string> = new Set<Surface>(["current", "shadowed", "log-only"]);

function isSurface(value: string): value is Surface {
  return SURFACES.has(value);
}

export function parseEventFilters(input: string): Parsed<EventFilter> {
  try {
    const surfaces = new Set<Surface>();
    const types: string[] = [];
    const words: string[] = [];
    const filters: EventFilter[] = [];
    for (const token of tokenize(input)) {
      const lower = token.toLowerCase();
      if (isSurface(lower)) {
        surfaces.add(lower);
        continue;
      }
      const kv = splitKey(token);
      const key = kv?.[0];
      if (kv && key === "surface") {
        for (const v of list(kv[1].toLowerCase())) {
          if (!isSurface(v)) {
            throw new Error(`surface is current, shadowed or log-only, not "${v}"`);
          }
          surfaces.add(v);
        }
      } else if (kv && key === "type") {
        types.push(...list(kv[1]));
      } else if (kv && (key === "seq" || key === "time")) {
        filters.push({ kind: key, ...parseRange(kv[1], key === "time") });
      } else if (kv && key === "text") {
        words.push(kv[1]);
      } else {
        words.push(token);
      }
    }
    const out: EventFilter[] = [];
    if (surfaces.size > 0) {
      out.push({ kind: "surface", values: [...surfaces] });
    }
    if (types.length > 0) {
      out.push({ kind: "type", values: types });
    }
    out.push(...filters);
    const text = words.join(" ");
    if (text.trim() !== "") {
      out.push({ kind: "text", text });
    }
    return { filters: out };
  } catch (err) {
    return { filters: [], error: (err as Error).message };
  }
}

/** Event filters usable in a search request (no `text` clause, semantics.md §6.6). */
export function searchableEventFilters(filters: EventFilter[]): EventFilter[] {
  return filters.filter((f) => f.kind !== "text");
}
