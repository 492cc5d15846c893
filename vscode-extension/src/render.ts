// Text of the read-only `dsh-session:` documents: pretty JSON with comments (JSONC), the target
// event of a window marked. Pure functions of the server's results.

import type { SessionEvent, SessionEventWindow, SessionHeader, SessionLogSnapshot, SessionSurfaceSnapshot } from "./protocol";

export const TARGET_MARKER = "// ▶ target";

export interface Rendered {
  text: string;
  /** Zero-based line of the target marker (event windows), or 0. */
  targetLine: number;
}

export function clampWindow(value: unknown, max: number): number {
  const n = typeof value === "number" && Number.isFinite(value) ? Math.trunc(value) : 0;
  return Math.max(0, Math.min(n, Math.max(0, max)));
}

export function formatTime(ms: number): string {
  if (!Number.isFinite(ms)) {
    return String(ms);
  }
  const d = new Date(ms);
  return Number.isNaN(d.getTime()) ? String(ms) : d.toISOString();
}

function indent(text: string, prefix: string): string {
  return text
    .split("\n")
    .map((line) => prefix + line)
    .join("\n");
}

function headerComment(session: SessionHeader): string[] {
  const lines = [`// session ${JSON.stringify(session.id)} created ${formatTime(session.createdAt)}`];
  if (session.cwd !== undefined) {
    lines.push(`// cwd ${session.cwd}`);
  }
  if (session.parentSession !== undefined) {
    lines.push(`// parent ${JSON.stringify(session.parentSession)}`);
  }
  return lines;
}

/** `{ "session": …, <extra keys>, "events": [ … ] }` with an optional comment line before events. */
function renderObject(
  comments: string[],
  session: SessionHeader,
  extra: [string, unknown][],
  events: SessionEvent[],
  markerBefore?: (e: SessionEvent) => string | undefined,
): Rendered {
  const out: string[] = [...comments, "{"];
  out.push(...`  "session": ${indent(JSON.stringify(session, null, 2), "  ").trimStart()},`.split("\n"));
  for (const [key, value] of extra) {
    out.push(`  ${JSON.stringify(key)}: ${JSON.stringify(value)},`);
  }
  let targetLine = 0;
  if (events.length === 0) {
    out.push(`  "events": []`);
  } else {
    out.push(`  "events": [`);
    events.forEach((event, i) => {
      const mark = markerBefore?.(event);
      if (mark !== undefined) {
        targetLine = out.length;
        out.push(`    ${mark}`);
      }
      const body = indent(JSON.stringify(event, null, 2), "    ");
      out.push(...(i < events.length - 1 ? body + "," : body).split("\n"));
    });
    out.push(`  ]`);
  }
  out.push("}");
  return { text: out.join("\n") + "\n", targetLine };
}

export function renderEventWindow(w: SessionEventWindow, before: number, after: number): Rendered {
  const t = w.target;
  const comments = [
    `// dsh-session event window: seq ${w.startSeq}..${w.endSeq}, target seq ${t.seq} (${t.type}), before ${before}, after ${after}`,
    ...headerComment(w.session),
  ];
  return renderObject(
    comments,
    w.session,
    [
      ["startSeq", w.startSeq],
      ["endSeq", w.endSeq],
      ["targetSeq", t.seq],
    ],
    w.events,
    (e) => (e.seq === t.seq ? `${TARGET_MARKER}: seq ${t.seq} ${t.type} at ${formatTime(t.time)}` : undefined),
  );
}

export function renderSurface(s: SessionSurfaceSnapshot): Rendered {
  const seqs = s.events.map((e) => e.seq);
  const comments = [
    `// dsh-session surface: ${s.events.length} current event(s) in surface order` +
      (s.capturedThroughSeq === null ? ", empty log" : `, captured through seq ${s.capturedThroughSeq}`),
    `// surface order: [${seqs.join(", ")}]`,
    ...headerComment(s.session),
  ];
  return renderObject(comments, s.session, [["capturedThroughSeq", s.capturedThroughSeq]], s.events);
}

export function renderSessionLog(s: SessionLogSnapshot): Rendered {
  const comments = [`// dsh-session raw log: ${s.events.length} event(s)`, ...headerComment(s.session)];
  return renderObject(comments, s.session, [], s.events);
}

export function renderError(what: string, message: string): Rendered {
  return { text: `// ${what} could not be read\n// ${message.replace(/\n/g, "\n// ")}\n`, targetLine: 0 };
}
