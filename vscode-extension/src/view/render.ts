// One event as a person reads it (docs/views.md §3): user, assistant (text, reasoning, tool
// calls), tool results folded when long; Markdown through markdown-it, sanitized by DOMPurify.
// Every element is built with the DOM API or from sanitized HTML; nothing from the log is ever
// inserted as markup unsanitized.

import DOMPurify from "dompurify";
import MarkdownIt from "markdown-it";
import type { SessionEvent, Surface } from "../protocol.gen";

const md = new MarkdownIt({ html: false, linkify: true, breaks: false });
const FOLD_LINES = 12;
const FOLD_CHARS = 1200;

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className?: string,
  text?: string,
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) {
    node.className = className;
  }
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

export function markdown(text: string): HTMLElement {
  const box = el("div", "md");
  box.innerHTML = DOMPurify.sanitize(md.render(text), { USE_PROFILES: { html: true } });
  return box;
}

type Obj = Record<string, unknown>;

function obj(v: unknown): Obj | undefined {
  return v && typeof v === "object" && !Array.isArray(v) ? (v as Obj) : undefined;
}

function str(v: unknown): string | undefined {
  return typeof v === "string" ? v : undefined;
}

/** Text that may be long: shown whole when short, else folded behind a summary line. */
function folded(text: string, label: string, pre: boolean): HTMLElement {
  const body = pre ? el("pre", "out", text) : markdown(text);
  const lines = text.split("\n").length;
  if (lines <= FOLD_LINES && text.length <= FOLD_CHARS) {
    return body;
  }
  const details = el("details", "fold");
  const size = `${lines.toLocaleString("en-US")} lines, ${text.length.toLocaleString("en-US")} chars`;
  details.append(el("summary", undefined, `${label} (${size})`), body);
  return details;
}

function prettyArguments(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

function blocks(content: unknown, out: HTMLElement, role: string): void {
  if (!Array.isArray(content)) {
    return;
  }
  for (const raw of content) {
    const b = obj(raw);
    if (!b) {
      continue;
    }
    const kind = b.type;
    if (kind === "text") {
      const text = str(b.text) ?? "";
      out.append(role === "tool" ? folded(text, "Output", true) : folded(text, "Long text", false));
    } else if (kind === "reasoning") {
      const details = el("details", "reasoning");
      details.append(el("summary", undefined, "Reasoning"), el("pre", "out", str(b.text) ?? ""));
      out.append(details);
    } else if (kind === "tool-call") {
      const call = el("div", "call");
      call.append(el("div", "call-name", `Tool call: ${str(b.name) ?? "?"}`));
      call.append(folded(prettyArguments(str(b.arguments) ?? ""), "Arguments", true));
      out.append(call);
    } else if (kind === "tool-result") {
      const result = el("div", "result");
      if (b.isError === true) {
        result.append(el("div", "error-word", "error"));
      }
      blocks(b.content, result, "tool");
      out.append(result);
    } else if (kind === "image") {
      out.append(el("div", "note", "[image]"));
    } else {
      out.append(el("div", "note", `[${typeof kind === "string" ? kind : "block"}]`));
    }
  }
}

export interface EventLabel {
  /** "User", "Assistant", "Tool result", "Compaction summary", …: the speaker. */
  who: string;
  role: "user" | "assistant" | "tool" | "other";
}

export function labelOf(event: SessionEvent | undefined, type: string): EventLabel {
  const data = obj(event?.data);
  if (type === "user/message") {
    const source = obj(data?.source);
    if (source?.compactSummary === true) {
      return { who: "Compaction summary", role: "user" };
    }
    if (source?.placeholder === true) {
      return { who: "Placeholder", role: "other" };
    }
    if (source?.kind === "plugin") {
      return { who: `User (${str(source.plugin) ?? "plugin"})`, role: "user" };
    }
    return { who: "User", role: "user" };
  }
  if (type === "assistant/message") {
    const model = str(obj(obj(data?.message)?.source)?.model);
    return { who: model ? `Assistant · ${model}` : "Assistant", role: "assistant" };
  }
  if (type === "tool/result") {
    return { who: "Tool result", role: "tool" };
  }
  return { who: type, role: "other" };
}

/** The body of a message event. */
export function messageBody(event: SessionEvent): HTMLElement {
  const body = el("div", "body");
  const data = obj(event.data);
  if (event.type === "user/message") {
    blocks(data?.content, body, "user");
  } else if (event.type === "assistant/message") {
    blocks(obj(data?.message)?.content, body, "assistant");
  } else if (event.type === "tool/result") {
    blocks(obj(data?.message)?.content, body, "tool");
    const error = obj(data?.error);
    if (error) {
      body.append(el("div", "error-word", `error: ${str(error.name) ?? ""} ${str(error.code) ?? ""}`.trim()));
    }
  }
  if (!body.childNodes.length) {
    body.append(el("div", "note", "(no text)"));
  }
  return body;
}

/** One line for a minor event: its type and a short look at its data. */
export function minorText(event: SessionEvent | undefined, type: string): string {
  if (!event) {
    return type;
  }
  let preview: string;
  try {
    const data = obj(event.data) ?? {};
    const shown: Obj = {};
    for (const [k, v] of Object.entries(data)) {
      if (k !== "import" && k !== "record") {
        shown[k] = v;
      }
    }
    preview = JSON.stringify(shown);
  } catch {
    preview = "";
  }
  if (preview.length > 160) {
    preview = preview.slice(0, 159) + "…";
  }
  return preview && preview !== "{}" ? `${type} ${preview}` : type;
}

/** The class of an event as colour AND a word (never colour alone). */
export function classBadge(surface: Surface | undefined): HTMLElement {
  const word = surface ?? "unknown";
  const badge = el("span", `cls cls-${word}`, word);
  badge.title =
    word === "current"
      ? "current: on the surface the model sees now"
      : word === "shadowed"
        ? "shadowed: the model saw it once; a replacement removed it"
        : word === "log-only"
          ? "log-only: in the log, never sent to the model"
          : "";
  return badge;
}

export function timeText(ms: number): string {
  const d = new Date(ms);
  return Number.isNaN(d.getTime()) ? "" : d.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
}
