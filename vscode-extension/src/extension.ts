// Entry point: the Session Query view container (Sessions / Events / Trace), the `dsh-session:`
// documents, the commands, and the server connection that feeds them.

import * as vscode from "vscode";
import { registerCommands } from "./commands";
import { VIEW_IDS, knownCommand } from "./ids";
import type { Ctx } from "./context";
import { SessionDocumentProvider } from "./documents";
import type { DidChangeParams } from "./protocol";
import { ServerManager } from "./server";
import { GROUPING_SETTING, groupingDescription, readGrouping, sessionsTarget } from "./grouping";
import { needsRestart } from "./settings";
import { SessionViews } from "./sessionView";
import { UsageView } from "./usageView";
import { ServerTreeProvider, selectionOf, type TreeElement } from "./tree";
import { SCHEME } from "./uri";
import { UnreadableSessions } from "./unreadable";

function setContext(key: string, value: unknown): void {
  void vscode.commands.executeCommand("setContext", key, value);
}

let running: ServerManager | undefined;
const COALESCE_MS = 300;

export function activate(context: vscode.ExtensionContext): { ctx: Ctx } {
  const output = vscode.window.createOutputChannel("Session Query");
  const server = new ServerManager(output);
  running = server;
  const rpc = () => server.rpc();

  const grouping = () => readGrouping(vscode.workspace.getConfiguration("dshQuery"));
  const unreadable = new UnreadableSessions();
  const sessions = new ServerTreeProvider("sessions", rpc, knownCommand, sessionsTarget(grouping()), {
    onRoots: (nodes) => {
      setContext("dshQuery.corpusEmpty", nodes.length === 0);
      void unreadable.refresh(rpc()); // the listing just ran: what it skipped is in the status
    },
    prepend: () => {
      const node = unreadable.node();
      return node ? [node] : [];
    },
  });
  const events = new ServerTreeProvider("events", rpc, knownCommand);
  const trace = new ServerTreeProvider("trace", rpc, knownCommand);
  const sessionsView = vscode.window.createTreeView(VIEW_IDS.sessions, { treeDataProvider: sessions, showCollapseAll: true });
  sessionsView.description = groupingDescription(grouping());
  unreadable.attach(sessionsView);
  const eventsView = vscode.window.createTreeView(VIEW_IDS.events, { treeDataProvider: events, showCollapseAll: true });
  const traceView = vscode.window.createTreeView(VIEW_IDS.trace, { treeDataProvider: trace, showCollapseAll: true });
  const docs = new SessionDocumentProvider(rpc, () => server.settings);
  const sessionViews = new SessionViews(context.extensionUri, {
    request: (method, params) => server.request(method, params),
    windowMax: () => server.settings.readWindowMax,
    traceEvent: (sessionId, seq) => ctx.traceEvent(sessionId, seq),
    traceSession: (sessionId) => ctx.traceSession(sessionId),
  });
  const usageView = new UsageView(context.extensionUri, {
    request: (method, params) => server.request(method, params),
    openSession: (sessionId) => sessionViews.open(sessionId),
  });

  const ctx: Ctx = {
    server,
    output,
    docs,
    sessionViews,
    usageView,
    views: { sessions, events, trace, sessionsView, eventsView, traceView },
    unreadable,
    selection: {},
    async showSession(sessionId, opts = {}) {
      ctx.selection.session = sessionId;
      const current = events.getTarget()?.args?.sessionId;
      if (current !== sessionId) {
        events.setTarget({ view: "events", args: { sessionId } });
      }
      eventsView.description = sessionId;
      setContext("dshQuery.hasSession", true);
      if (opts.trace) {
        const t = trace.getTarget();
        if (t?.view !== "lineage" || t.args?.sessionId !== sessionId) {
          trace.setTarget({ view: "lineage", args: { sessionId } });
          traceView.description = `lineage of ${sessionId}`;
          setContext("dshQuery.hasTrace", true);
        }
      }
      const el = sessions.findSession(sessionId);
      if (el && sessionsView.visible && !sessionsView.selection.includes(el)) {
        try {
          await sessionsView.reveal(el, { select: false, focus: false, expand: false });
        } catch {
          // not shown any more
        }
      }
      if (opts.focus) {
        await vscode.commands.executeCommand(`${VIEW_IDS.events}.focus`);
      }
    },
    async traceSession(sessionId) {
      ctx.selection.session = sessionId;
      trace.setTarget({ view: "lineage", args: { sessionId } });
      traceView.description = `lineage of ${sessionId}`;
      setContext("dshQuery.hasTrace", true);
      await vscode.commands.executeCommand(`${VIEW_IDS.trace}.focus`);
    },
    async traceEvent(sessionId, seq) {
      ctx.followEvent(sessionId, seq);
      await vscode.commands.executeCommand(`${VIEW_IDS.trace}.focus`);
    },
    followEvent(sessionId, seq) {
      ctx.selection.event = { sessionId, seq };
      const t = trace.getTarget();
      if (t?.view !== "eventTrace" || t.args?.sessionId !== sessionId || t.args?.seq !== seq) {
        trace.setTarget({ view: "eventTrace", args: { sessionId, seq } });
      }
      traceView.description = `event ${seq} of ${sessionId}`;
      setContext("dshQuery.hasTrace", true);
    },
  };

  const selected = (e: vscode.TreeViewSelectionChangeEvent<TreeElement>) => {
    const el = e.selection[0];
    return el ? selectionOf(el.node) : undefined;
  };

  setContext("dshQuery.serverState", "starting");
  setContext("dshQuery.corpusEmpty", false);
  setContext("dshQuery.hasSession", false);
  setContext("dshQuery.hasTrace", false);

  context.subscriptions.push(
    output,
    server,
    sessions,
    events,
    trace,
    sessionsView,
    eventsView,
    traceView,
    docs,
    sessionViews,
    usageView,
    unreadable,
    unreadable.onDidChange(() => sessions.refresh()),
    vscode.workspace.registerTextDocumentContentProvider(SCHEME, docs),
    ...registerCommands(ctx),
    // The Trace view follows the selection: a session shows its lineage, an event its trace
    // (wherever it was selected: the Sessions view's Events group, the Events view, a search hit).
    sessionsView.onDidChangeSelection((e) => {
      const r = selected(e);
      if (r && r.seq === undefined) {
        void ctx.showSession(r.sessionId, { trace: true });
      } else if (r && r.seq !== undefined) {
        ctx.followEvent(r.sessionId, r.seq);
      }
    }),
    eventsView.onDidChangeSelection((e) => {
      const r = selected(e);
      if (r && r.seq !== undefined) {
        ctx.followEvent(r.sessionId, r.seq);
      }
    }),
    traceView.onDidChangeSelection((e) => {
      const r = selected(e);
      if (r && r.seq === undefined) {
        void ctx.showSession(r.sessionId, { trace: false });
      } else if (r && r.seq !== undefined) {
        ctx.selection.event = { sessionId: r.sessionId, seq: r.seq };
      }
    }),
    server.onDidChangeState((state) => {
      setContext("dshQuery.serverState", state);
      if (state === "running" || state === "stopped" || state === "failed") {
        if (state !== "running") {
          setContext("dshQuery.corpusEmpty", false);
        }
        sessions.refresh();
        events.refresh();
        trace.refresh();
        docs.refresh();
        if (state === "running") {
          sessionViews.refresh();
          usageView.refresh();
        }
      }
    }),
    server.onDidChange((p: DidChangeParams) => coalesce(p)),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (!e.affectsConfiguration("dshQuery")) {
        return;
      }
      if (e.affectsConfiguration(GROUPING_SETTING)) {
        // Another tree (its own node ids): the server needs no restart.
        sessions.setTarget(sessionsTarget(grouping()));
        sessionsView.description = groupingDescription(grouping());
      }
      if (needsRestart((key) => e.affectsConfiguration(key))) {
        void server.restart();
        return;
      }
      server.settings = server.readSettings();
      if (e.affectsConfiguration("dshQuery.readWindow")) {
        docs.refresh();
      }
    }),
  );

  // A busy live session can change every 250 ms (the server's debounce); refresh at most every
  // COALESCE_MS, with everything that changed in between.
  let pendingIds = new Set<string>();
  let pendingCorpus = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  function coalesce(p: DidChangeParams): void {
    for (const id of Array.isArray(p.sessionIds) ? p.sessionIds : []) {
      if (typeof id === "string") {
        pendingIds.add(id);
      }
    }
    pendingCorpus = pendingCorpus || p.corpus === true;
    if (timer === undefined) {
      timer = setTimeout(() => {
        timer = undefined;
        const change: DidChangeParams = { sessionIds: [...pendingIds], corpus: pendingCorpus || undefined };
        pendingIds = new Set();
        pendingCorpus = false;
        void onDidChange(change);
      }, COALESCE_MS);
    }
  }
  context.subscriptions.push({ dispose: () => timer !== undefined && clearTimeout(timer) });

  async function onDidChange(p: DidChangeParams): Promise<void> {
    const ids = new Set(Array.isArray(p.sessionIds) ? p.sessionIds.filter((s) => typeof s === "string") : []);
    if (p.corpus) {
      sessions.refresh();
    } else if (ids.size > 0) {
      await sessions.refreshSessions(ids);
    }
    if (p.corpus || events.touches(ids)) {
      events.refresh();
    }
    if (p.corpus || trace.touches(ids)) {
      trace.refresh();
    }
    if (p.corpus || ids.size > 0) {
      docs.refresh(p.corpus ? undefined : ids);
      sessionViews.refresh(p.corpus ? undefined : ids);
    }
    if (p.corpus) {
      usageView.refresh(); // a corpus-wide change; a live append waits for the page's own reload
    }
  }

  void server.start();
  return { ctx };
}

/** Stops the server (shutdown, exit, then the process if it lingers). */
export function deactivate(): Promise<void> | undefined {
  const server = running;
  running = undefined;
  return server?.stop();
}
