// Palette and view-menu commands (editor.md, category "Session Query").

import * as vscode from "vscode";
import type { Ctx } from "./context";
import { targetUri } from "./documents";
import { formatError, isCancellation } from "./errors";
import { EVENT_FILTER_HELP, SESSION_FILTER_HELP, parseEventFilters, parseSessionFilters } from "./filters";
import { Methods, type SessionEventSearchDocument, type SessionRecord } from "./protocol";
import { formatTime } from "./render";
import { availability, refFromArgs, type SessionRef } from "./refs";
import { searchInSession, searchSessions, type HitActions } from "./search";
import type { DocTarget } from "./uri";
import { COMMANDS } from "./ids";
import { GROUPINGS, GROUPING_LABELS, isGrouping, readGrouping } from "./grouping";

export { COMMANDS, knownCommand } from "./ids";

export function showError(prefix: string, err: unknown): void {
  if (isCancellation(err)) {
    return;
  }
  void vscode.window.showErrorMessage(`${prefix}: ${formatError(err)}`);
}

// ---- documents --------------------------------------------------------------------------------

export async function openDocument(ctx: Ctx, target: DocTarget, preserveFocus = false): Promise<vscode.TextEditor> {
  const uri = targetUri(target);
  const open = vscode.workspace.textDocuments.some((d) => d.uri.toString() === uri.toString());
  const doc = await vscode.workspace.openTextDocument(uri);
  if (open) {
    ctx.docs.refresh(new Set([target.sessionId]));
  }
  const editor = await vscode.window.showTextDocument(doc, { preview: true, preserveFocus });
  const line = ctx.docs.targetLine(uri);
  if (target.kind === "event" && line !== undefined) {
    const pos = new vscode.Position(line, 0);
    editor.selection = new vscode.Selection(pos, pos);
    editor.revealRange(new vscode.Range(pos, pos), vscode.TextEditorRevealType.AtTop);
  }
  return editor;
}

// ---- choosing a session / event ----------------------------------------------------------------

interface SessionItem extends vscode.QuickPickItem {
  record: SessionRecord;
}

function sessionItem(record: SessionRecord): SessionItem {
  const h = record.header;
  const parts = [availability(record)];
  if (h.cwd) {
    parts.push(h.cwd);
  }
  let detail = `created ${formatTime(h.createdAt)}`;
  if (h.parentSession !== undefined) {
    detail += ` · parent ${h.parentSession}`;
  }
  if (h.agentPreset !== undefined) {
    detail += ` · ${h.agentPreset}`;
  }
  return { label: h.id, description: parts.join(" · "), detail, record };
}

function newestFirst(records: SessionRecord[]): SessionRecord[] {
  return [...records].sort((a, b) => b.header.createdAt - a.header.createdAt);
}

async function pickSession(ctx: Ctx, title: string): Promise<string | undefined> {
  let records: SessionRecord[];
  try {
    records = await ctx.server.request(Methods.listSessions, {});
  } catch (err) {
    showError("Session Query", err);
    return undefined;
  }
  if (records.length === 0) {
    void vscode.window.showInformationMessage("Session Query: there are no sessions.");
    return undefined;
  }
  const pick = await vscode.window.showQuickPick(newestFirst(records).map(sessionItem), {
    title,
    placeHolder: "Choose a session",
    matchOnDescription: true,
    matchOnDetail: true,
  });
  return pick?.record.header.id;
}

/** The session a command is about: its argument, else the selection, else ask. */
async function sessionFor(ctx: Ctx, args: unknown[], title: string): Promise<string | undefined> {
  return refFromArgs(args)?.sessionId ?? ctx.selection.session ?? (await pickSession(ctx, title));
}

async function eventFor(ctx: Ctx, args: unknown[], title: string): Promise<SessionRef | undefined> {
  const ref = refFromArgs(args);
  if (ref?.seq !== undefined) {
    return ref;
  }
  if (!ref && ctx.selection.event) {
    return ctx.selection.event;
  }
  const sessionId = ref?.sessionId ?? ctx.selection.session ?? (await pickSession(ctx, title));
  if (sessionId === undefined) {
    return undefined;
  }
  const text = await vscode.window.showInputBox({
    title,
    prompt: `Event seq in session ${sessionId}`,
    validateInput: (v) => (/^\d+$/.test(v.trim()) ? undefined : "a non-negative integer"),
  });
  return text === undefined ? undefined : { sessionId, seq: Number(text.trim()) };
}

// ---- search ------------------------------------------------------------------------------------

/** What a picked hit does: its event window opens, and the trees follow it (its session in
 *  Events, the event's trace in Trace). */
function hitActions(ctx: Ctx): HitActions {
  return {
    open(hit) {
      void openDocument(ctx, { kind: "event", sessionId: hit.sessionId, seq: hit.seq }).catch((err) =>
        showError("Open Event", err),
      );
      void ctx.showSession(hit.sessionId, { focus: false, trace: false });
      ctx.followEvent(hit.sessionId, hit.seq);
    },
    openView(hit) {
      ctx.sessionViews.open(hit.sessionId, hit.seq);
    },
    error: showError,
    unreadable: (page) => ctx.unreadable.note(page),
  };
}

// ---- filters -----------------------------------------------------------------------------------

let lastSessionFilter = "";
let lastEventFilter = "";

async function filterSessions(ctx: Ctx): Promise<void> {
  const text = await vscode.window.showInputBox({
    title: "Filter Sessions",
    prompt: SESSION_FILTER_HELP,
    value: lastSessionFilter,
    placeHolder: "live cwd:/home/me/project created:2024-05-01..",
    validateInput: (v) => parseSessionFilters(v).error,
  });
  if (text === undefined) {
    return;
  }
  lastSessionFilter = text;
  const { filters } = parseSessionFilters(text);
  let records: SessionRecord[];
  try {
    records = await ctx.server.request(Methods.filterSessions, { filters });
  } catch (err) {
    showError("Filter Sessions", err);
    return;
  }
  const pick = await vscode.window.showQuickPick(newestFirst(records).map(sessionItem), {
    title: `${records.length} session(s) match ${text.trim() === "" ? "(no filter)" : text}`,
    placeHolder: records.length === 0 ? "No session matches" : "Choose a session to show its events",
    matchOnDescription: true,
    matchOnDetail: true,
  });
  if (pick) {
    await ctx.showSession(pick.record.header.id, { focus: true, trace: true });
  }
}

async function filterEvents(ctx: Ctx, args: unknown[]): Promise<void> {
  const sessionId = await sessionFor(ctx, args, "Filter Events");
  if (sessionId === undefined) {
    return;
  }
  const text = await vscode.window.showInputBox({
    title: `Filter Events of ${sessionId}`,
    prompt: EVENT_FILTER_HELP,
    value: lastEventFilter,
    placeHolder: "current type:user/message needle",
    validateInput: (v) => parseEventFilters(v).error,
  });
  if (text === undefined) {
    return;
  }
  lastEventFilter = text;
  const { filters } = parseEventFilters(text);
  let docs: SessionEventSearchDocument[];
  try {
    docs = await ctx.server.request(Methods.filterEvents, { sessionId, filters });
  } catch (err) {
    showError("Filter Events", err);
    return;
  }
  const items = docs.map((d) => ({
    label: `#${d.seq} ${d.type}`,
    description: `${d.surface} · ${formatTime(d.time)}`,
    detail: d.text.length > 240 ? d.text.slice(0, 239) + "…" : d.text,
    doc: d,
  }));
  const pick = await vscode.window.showQuickPick(items, {
    title: `${docs.length} event(s) of ${sessionId} match`,
    placeHolder: docs.length === 0 ? "No event matches" : "Choose an event to open its window",
    matchOnDescription: true,
    matchOnDetail: true,
  });
  if (pick) {
    await openDocument(ctx, { kind: "event", sessionId, seq: pick.doc.seq });
  }
}

// ---- persistence -------------------------------------------------------------------------------

async function mountPersistence(ctx: Ctx, args: unknown[]): Promise<void> {
  // importers.md §4.3: "auto", one URI or an array of URIs mounted as one.
  const arg = args[0];
  const given = Array.isArray(arg) && arg.every((v) => typeof v === "string") ? (arg as string[]) : undefined;
  let uri = typeof arg === "string" ? arg : undefined;
  if (uri === undefined && given === undefined) {
    const choice = await vscode.window.showQuickPick(
      [
        { label: "$(edit) Enter a URI…", id: "uri" },
        { label: "$(folder) JSONL session root…", id: "jsonl" },
        { label: "$(database) SQLite database file…", id: "sqlite" },
      ],
      { title: "Mount Persistence" },
    );
    if (!choice) {
      return;
    }
    if (choice.id === "uri") {
      let current = "";
      try {
        const status = await ctx.server.request(Methods.status, {});
        current = Array.isArray(status.uri) ? (status.uri[0] ?? "") : (status.uri ?? "");
      } catch {
        // not running: the mount below reports it
      }
      uri = await vscode.window.showInputBox({
        title: "Mount Persistence",
        prompt:
          "auto, jsonl:/absolute/root, sqlite:/absolute/file.db, claude:/home, codex:/home, " +
          "gemini:/home, opencode:/dir, copilot:/home or qwen:/home",
        value: current,
        validateInput: (v) =>
          /^((jsonl|sqlite|claude|codex|gemini|opencode|copilot|qwen):.+|auto)$/.test(v.trim())
            ? undefined
            : "auto, or starts with jsonl:, sqlite:, claude:, codex:, gemini:, opencode:, copilot: or qwen:",
      });
    } else {
      const picked = await vscode.window.showOpenDialog({
        canSelectFiles: choice.id === "sqlite",
        canSelectFolders: choice.id === "jsonl",
        canSelectMany: false,
        openLabel: "Mount",
      });
      if (picked?.[0]) {
        uri = `${choice.id}:${picked[0].fsPath.replace(/%/g, "%25").replace(/\?/g, "%3F").replace(/#/g, "%23")}`;
      }
    }
  }
  if (!uri && !given) {
    return;
  }
  try {
    const result = await ctx.server.request(Methods.mount, {
      uri: given ?? uri?.trim() ?? "", // one of them is set (checked above)
    });
    const shown = Array.isArray(result.uri) ? result.uri.join(" + ") : result.uri;
    void vscode.window.showInformationMessage(
      `Session Query: mounted ${shown} (${result.writable ? "writable" : "read-only"}).`,
    );
  } catch (err) {
    showError("Mount Persistence", err);
  }
}

async function unmountPersistence(ctx: Ctx): Promise<void> {
  try {
    await ctx.server.request(Methods.unmount, {});
    void vscode.window.showInformationMessage("Session Query: persistence unmounted; only live sessions are shown.");
  } catch (err) {
    showError("Unmount Persistence", err);
  }
}

/** The file-name segment of an id (tools.md §2.3): each UTF-16 code unit outside [A-Za-z0-9_-]
 *  becomes "_". */
export function exportSegment(sessionId: string): string {
  return sessionId.replace(/[^A-Za-z0-9_-]/g, "_");
}

async function exportSession(ctx: Ctx, args: unknown[]): Promise<void> {
  const id = await sessionFor(ctx, args, "Export Session");
  if (id === undefined) {
    return;
  }
  const name = `dsh-session-${exportSegment(id)}.zip`;
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
  const target = await vscode.window.showSaveDialog({
    title: "Export Session",
    saveLabel: "Export",
    defaultUri: folder ? vscode.Uri.joinPath(folder, name) : vscode.Uri.file(name),
    filters: { "ZIP archive": ["zip"] },
  });
  if (!target) {
    return;
  }
  // The save dialog has already asked before replacing a file.
  const result = await ctx.server.request(Methods.exportSession, {
    sessionId: id,
    outputPath: target.fsPath,
    includeDescendants: true,
    overwrite: true,
  });
  void vscode.window.showInformationMessage(
    `Session Query: exported ${result.entries.length} entries to ${result.path}.`,
  );
}

async function checkpointNow(ctx: Ctx, args: unknown[]): Promise<void> {
  const ref = refFromArgs(args);
  try {
    const result = await ctx.server.request(
      Methods.checkpoint,
      ref ? { sessionId: ref.sessionId } : {},
    );
    const n = Object.keys(result.flushed ?? {}).length;
    void vscode.window.showInformationMessage(
      n === 0 ? "Session Query: nothing to checkpoint." : `Session Query: checkpointed ${n} session(s).`,
    );
  } catch (err) {
    showError("Checkpoint", err);
  }
}

// ---- grouping the Sessions view ----------------------------------------------------------------

/** Group Sessions By…: a grouping passed as argument, else a QuickPick; stored in the setting
 * (the configuration listener in extension.ts switches the view). */
async function groupSessions(args: unknown[]): Promise<void> {
  const cfg = vscode.workspace.getConfiguration("dshQuery");
  let chosen = isGrouping(args[0]) ? args[0] : undefined;
  if (chosen === undefined) {
    const current = readGrouping(cfg);
    const picked = await vscode.window.showQuickPick(
      GROUPINGS.map((g) => ({ ...GROUPING_LABELS[g], description: g === current ? "current" : "", grouping: g })),
      { title: "Group Sessions By", placeHolder: "How the Sessions view groups the sessions" },
    );
    chosen = picked?.grouping;
  }
  if (chosen !== undefined) {
    await cfg.update("sessions.groupBy", chosen, vscode.ConfigurationTarget.Global);
  }
}

// ---- registration ------------------------------------------------------------------------------

export function registerCommands(ctx: Ctx): vscode.Disposable[] {
  const guard =
    (name: string, fn: (...args: unknown[]) => Promise<unknown> | unknown) =>
    async (...args: unknown[]) => {
      try {
        await fn(...args);
      } catch (err) {
        showError(name, err);
      }
    };
  const reg = (id: string, name: string, fn: (...args: unknown[]) => Promise<unknown> | unknown) =>
    vscode.commands.registerCommand(id, guard(name, fn));

  return [
    reg(COMMANDS.refresh, "Refresh", () => {
      ctx.views.sessions.refresh();
      ctx.views.events.refresh();
      ctx.views.trace.refresh();
      ctx.docs.refresh();
    }),
    reg(COMMANDS.searchSessions, "Search Sessions", () =>
      searchSessions(ctx.server, ctx.server.settings.searchLimit, hitActions(ctx)),
    ),
    reg(COMMANDS.searchInSession, "Search in Session", async (...a) => {
      const sessionId = await sessionFor(ctx, a, "Search in Session");
      if (sessionId !== undefined) {
        await searchInSession(ctx.server, sessionId, ctx.server.settings.searchLimit, hitActions(ctx));
      }
    }),
    reg(COMMANDS.filterSessions, "Filter Sessions", () => filterSessions(ctx)),
    reg(COMMANDS.filterEvents, "Filter Events", (...a) => filterEvents(ctx, a)),
    reg(COMMANDS.traceSession, "Trace Session", async (...a) => {
      const id = await sessionFor(ctx, a, "Trace Session");
      if (id !== undefined) {
        await ctx.traceSession(id);
      }
    }),
    reg(COMMANDS.traceEvent, "Trace Event", async (...a) => {
      const ref = await eventFor(ctx, a, "Trace Event");
      if (ref?.seq !== undefined) {
        await ctx.traceEvent(ref.sessionId, ref.seq);
      }
    }),
    reg(COMMANDS.openEvent, "Open Event", async (...a) => {
      const ref = await eventFor(ctx, a, "Open Event");
      if (ref?.seq !== undefined) {
        ctx.selection.event = { sessionId: ref.sessionId, seq: ref.seq };
        await openDocument(ctx, { kind: "event", sessionId: ref.sessionId, seq: ref.seq }, true);
      }
    }),
    reg(COMMANDS.openSurface, "Open Surface", async (...a) => {
      const id = await sessionFor(ctx, a, "Open Surface");
      if (id !== undefined) {
        await openDocument(ctx, { kind: "surface", sessionId: id });
      }
    }),
    reg(COMMANDS.openRawLog, "Open Raw Log", async (...a) => {
      const id = await sessionFor(ctx, a, "Open Raw Log");
      if (id !== undefined) {
        await openDocument(ctx, { kind: "log", sessionId: id });
      }
    }),
    reg(COMMANDS.copySessionId, "Copy Session Id", async (...a) => {
      const id = await sessionFor(ctx, a, "Copy Session Id");
      if (id !== undefined) {
        await vscode.env.clipboard.writeText(id);
        vscode.window.setStatusBarMessage(`Copied session id ${id}`, 3000);
      }
    }),
    reg(COMMANDS.showSession, "Show Session", async (...a) => {
      const id = await sessionFor(ctx, a, "Show Session");
      if (id !== undefined) {
        await ctx.showSession(id, { focus: true, trace: true });
      }
    }),
    reg(COMMANDS.exportSession, "Export Session", (...a) => exportSession(ctx, a)),
    reg(COMMANDS.mountPersistence, "Mount Persistence", (...a) => mountPersistence(ctx, a)),
    reg(COMMANDS.unmountPersistence, "Unmount Persistence", () => unmountPersistence(ctx)),
    reg(COMMANDS.checkpointNow, "Checkpoint", (...a) => checkpointNow(ctx, a)),
    reg(COMMANDS.restartServer, "Restart Server", () => ctx.server.restart()),
    reg(COMMANDS.showOutput, "Show Server Output", () => ctx.output.show(true)),
    reg(COMMANDS.groupSessions, "Group Sessions", (...a) => groupSessions(a)),
    reg(COMMANDS.openUsageView, "Open Usage View", () => ctx.usageView.open()),
    reg(COMMANDS.showUnreadable, "Show Unreadable Sessions", () => ctx.unreadable.show()),
    reg(COMMANDS.openSessionView, "Open Session View", async (...a) => {
      const ref = refFromArgs(a);
      const id = ref?.sessionId ?? (await sessionFor(ctx, a, "Open Session View"));
      if (id !== undefined) {
        ctx.sessionViews.open(id, ref?.seq);
      }
    }),
  ];
}
