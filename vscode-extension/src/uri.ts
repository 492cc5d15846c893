// `dsh-session:` URIs. The real identity (kind, session id, seq) lives in the query as base64url
// of a small JSON object, so session ids can contain any character (`/`, `?`, `#`, `%`, spaces,
// lone surrogates excepted). The path is only a readable tab title.

export const SCHEME = "dsh-session";

export type DocKind = "event" | "surface" | "log";

export interface DocTarget {
  kind: DocKind;
  sessionId: string;
  seq?: number;
}

export interface UriParts {
  scheme: string;
  path: string;
  query: string;
}

export function base64UrlEncode(text: string): string {
  return Buffer.from(text, "utf8").toString("base64").replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

export function base64UrlDecode(text: string): string {
  if (!/^[A-Za-z0-9_-]*={0,2}$/.test(text)) {
    throw new Error("not base64url");
  }
  const b64 = text.replace(/=+$/, "").replace(/-/g, "+").replace(/_/g, "/");
  return Buffer.from(b64, "base64").toString("utf8");
}

/** A file-name-safe short form of a session id for the tab title. */
export function safeLabel(sessionId: string, max = 40): string {
  let s = sessionId.replace(/[^A-Za-z0-9._-]+/g, "_").replace(/^[._]+/, "");
  if (s === "") {
    s = "session";
  }
  return s.length > max ? s.slice(0, max - 1) + "~" : s;
}

export function titleFor(target: DocTarget): string {
  const id = safeLabel(target.sessionId);
  switch (target.kind) {
    case "event":
      return `${id} event ${target.seq}.jsonc`;
    case "surface":
      return `${id} surface.jsonc`;
    case "log":
      return `${id} log.jsonc`;
  }
}

export function toUriParts(target: DocTarget): UriParts {
  const payload: { k: DocKind; s: string; q?: number } = { k: target.kind, s: target.sessionId };
  if (target.kind === "event") {
    if (!Number.isSafeInteger(target.seq) || (target.seq as number) < 0) {
      throw new Error("an event document needs a non-negative integer seq");
    }
    payload.q = target.seq;
  }
  return { scheme: SCHEME, path: "/" + titleFor(target), query: base64UrlEncode(JSON.stringify(payload)) };
}

export function fromUriParts(parts: { scheme: string; query: string }): DocTarget {
  if (parts.scheme !== SCHEME) {
    throw new Error(`not a ${SCHEME}: URI`);
  }
  let payload: unknown;
  try {
    payload = JSON.parse(base64UrlDecode(parts.query));
  } catch {
    throw new Error(`malformed ${SCHEME}: URI`);
  }
  const p = payload as { k?: unknown; s?: unknown; q?: unknown };
  if (typeof p !== "object" || p === null || typeof p.s !== "string") {
    throw new Error(`malformed ${SCHEME}: URI`);
  }
  if (p.k === "event") {
    if (typeof p.q !== "number" || !Number.isSafeInteger(p.q) || p.q < 0) {
      throw new Error(`malformed ${SCHEME}: URI`);
    }
    return { kind: "event", sessionId: p.s, seq: p.q };
  }
  if (p.k === "surface" || p.k === "log") {
    return { kind: p.k, sessionId: p.s };
  }
  throw new Error(`malformed ${SCHEME}: URI`);
}
