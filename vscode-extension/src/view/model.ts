// The session view's rows and numbers (docs/views.md §3), pure functions of the server's results:
// no DOM, so node --test runs them. The page (view/app.ts) turns rows into elements.

import type { SessionEventRecord, SessionTimeline, Surface, TimelineReplacement, TimelineStep } from "../protocol.gen";

/** The events a conversation shows as messages; every other event is "minor" (one line). */
export const MESSAGE_TYPES: ReadonlySet<string> = new Set(["user/message", "assistant/message", "tool/result"]);

export type Row =
  /** One event: a message, or (compact) one line of a minor run that was opened. */
  | { kind: "event"; seq: number; depth: number; compact: boolean }
  /** A run of consecutive minor events of the log, closed. */
  | { kind: "minor"; key: string; seqs: number[]; depth: number }
  /** A replacement (views.md §2), just before the event that made it. */
  | { kind: "divider"; rep: TimelineReplacement; depth: number; expandable: boolean; expanded: boolean };

/** The whole log in seq order: messages, closed runs of minor events (``opened`` holds the keys
 * of runs shown line by line), and a divider before every replacing event. */
export function logRows(
  records: readonly SessionEventRecord[],
  replacements: readonly TimelineReplacement[],
  opened: ReadonlySet<string>,
): Row[] {
  const reps = new Map(replacements.map((r) => [r.seq, r]));
  const rows: Row[] = [];
  let run: number[] = [];
  const flush = (): void => {
    if (run.length === 0) {
      return;
    }
    const key = `m${run[0]}`;
    if (opened.has(key)) {
      for (const seq of run) {
        rows.push({ kind: "event", seq, depth: 1, compact: true });
      }
    } else {
      rows.push({ kind: "minor", key, seqs: run, depth: 0 });
    }
    run = [];
  };
  for (const r of records) {
    if (!MESSAGE_TYPES.has(r.type)) {
      run.push(r.seq);
      continue;
    }
    flush();
    const rep = reps.get(r.seq);
    if (rep) {
      rows.push({ kind: "divider", rep, depth: 0, expandable: false, expanded: false });
    }
    rows.push({ kind: "event", seq: r.seq, depth: 0, compact: false });
  }
  flush();
  return rows;
}

/** A surface in surface order (views.md §1), a divider before every event that replaced
 * something; an expanded divider (``expanded``) is followed by what it shadowed (``shadowed``,
 * known once loaded), one level deeper, with their own dividers. */
export function surfaceRows(
  surface: readonly number[],
  replacements: readonly TimelineReplacement[],
  expanded: ReadonlySet<number>,
  shadowed: ReadonlyMap<number, readonly number[]>,
): Row[] {
  const reps = new Map(replacements.map((r) => [r.seq, r]));
  const rows: Row[] = [];
  const walk = (seqs: readonly number[], depth: number): void => {
    for (const seq of seqs) {
      const rep = reps.get(seq);
      if (rep) {
        const open = expanded.has(seq);
        rows.push({ kind: "divider", rep, depth, expandable: true, expanded: open });
        const children = shadowed.get(seq);
        if (open && children) {
          walk(children, depth + 1);
        }
      }
      rows.push({ kind: "event", seq, depth, compact: false });
    }
  };
  walk(surface, 0);
  return rows;
}

/** What ``rep`` shadowed, in surface order, from the surface just before it (views.md §2:
 * ``firstSeq`` and ``lastSeq`` are the span's ends in surface order). */
export function shadowedSpan(before: readonly number[], rep: TimelineReplacement): number[] {
  const p = before.indexOf(rep.shadowed.firstSeq);
  const q = before.indexOf(rep.shadowed.lastSeq);
  return p < 0 || q < p ? [] : before.slice(p, q + 1);
}

/** The events of a log as the embedded host replays them: only what the fold needs. */
export interface Marked {
  type: string;
  surfaceOp?: unknown;
}

const SURFACE_TYPES = MESSAGE_TYPES;

/** The surface after events 0..through of a log whose fold the server already validated: appends
 * and positional replaces (semantics.md §2.1) re-applied, nothing checked. The HTML export answers
 * readSurface {throughSeq} with it, having no server. */
export function replaySurface(events: readonly Marked[], through: number): number[] {
  const nodes: number[] = [];
  const last = Math.min(through, events.length - 1);
  for (let seq = 0; seq <= last; seq++) {
    const e = events[seq];
    if (!SURFACE_TYPES.has(e.type)) {
      continue;
    }
    const op = e.surfaceOp;
    if (op && typeof op === "object") {
      const { start, end } = op as { start: number; end: number };
      const p = nodes.indexOf(start);
      const q = nodes.indexOf(end);
      nodes.splice(p, q - p + 1, seq);
    } else {
      nodes.push(seq);
    }
  }
  return nodes;
}

// ---- numbers and words ------------------------------------------------------------------------

const GROUPED = new Intl.NumberFormat("en-US");

export function count(n: number): string {
  return GROUPED.format(n);
}

/** "150k", "1.2M": axis labels. */
export function short(n: number): string {
  if (n >= 1_000_000) {
    return `${(n / 1_000_000).toFixed(n >= 10_000_000 ? 0 : 1)}M`;
  }
  if (n >= 1_000) {
    return `${(n / 1_000).toFixed(n >= 10_000 ? 0 : 1)}k`;
  }
  return String(n);
}

export const ESTIMATE_LABEL = "≈ tokens (estimate)";
export const RECORDED_LABEL = "recorded context (tokens)";

export function events(n: number): string {
  return `${count(n)} ${n === 1 ? "event" : "events"}`;
}

/** "191 events, #7–#946, replaced by #948" (views.md §3). */
export function dividerText(rep: TimelineReplacement): string {
  const { count: n, firstSeq, lastSeq } = rep.shadowed;
  const span = firstSeq === lastSeq ? `#${firstSeq}` : `#${firstSeq}–#${lastSeq}`;
  return `${events(n)}, ${span}, replaced by #${rep.seq}`;
}

export function kindLabel(rep: TimelineReplacement): string {
  return rep.kind === "compaction" ? "Compaction" : "Tool result rewritten";
}

export function surfaceWord(surface: Surface | undefined): string {
  return surface ?? "unknown";
}

/** One step's numbers as lines a person reads (the chart's hover and its screen-reader text). */
export function stepLines(step: TimelineStep, index: number): string[] {
  const lines = [`Step ${index + 1} · #${step.seq}${step.model ? ` · ${step.model}` : ""}`];
  if (step.turn !== null) {
    lines.push(`turn ${step.turn}${step.step !== null ? `, step ${step.step}` : ""}`);
  }
  const s = step.surface;
  lines.push(`saw ${events(s.events)}, ${count(s.chars)} chars, ≈${count(s.approxTokens)} tokens (estimate)`);
  const r = step.recorded;
  if (r) {
    const parts: string[] = [];
    const add = (name: string, v: number | null): void => {
      if (v !== null) {
        parts.push(`${name} ${count(v)}`);
      }
    };
    add("input", r.input);
    add("cache read", r.cacheRead);
    add("cache write", r.cacheWrite);
    add("output", r.output);
    add("reasoning", r.reasoning);
    lines.push(r.context !== null ? `recorded context ${count(r.context)} tokens` : "recorded context: not recorded");
    if (parts.length) {
      lines.push(parts.join(", "));
    }
  } else {
    lines.push("no usage recorded for this response");
  }
  return lines;
}

/** The x position (1-based steps) of a replacement's drop: between the last step before it and
 * the first after it. */
export function dropX(steps: readonly TimelineStep[], rep: TimelineReplacement): number {
  const after = steps.findIndex((s) => s.seq > rep.seq);
  const k = after < 0 ? steps.length : after; // steps before the replacement
  return Math.max(0.5, Math.min(k + 0.5, steps.length + 0.5));
}

/** The chart's series: x = 1..n, recorded context (null where absent), the estimate, the window. */
export function chartData(t: SessionTimeline): [number[], (number | null)[], number[], (number | null)[]] {
  const xs = t.steps.map((_, i) => i + 1);
  const recorded = t.steps.map((s) => s.recorded?.context ?? null);
  const approx = t.steps.map((s) => s.surface.approxTokens);
  const window = t.steps.map(() => t.contextWindow);
  return [xs, recorded, approx, window];
}
