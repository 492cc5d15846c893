// The session view (docs/views.md §3): one webview panel per session, showing the page bundle
// dist/session_view.js (src/view/) under a strict Content-Security-Policy. The page asks for method
// results through messages (viewProtocol.ts); only the read-only methods it needs are forwarded,
// always for the panel's own session.

import { randomBytes } from "node:crypto";
import * as vscode from "vscode";
import { formatError, describeError } from "./errors";
import type { Method, Params, Result, SessionEventRecord } from "./protocol";
import {
  isViewAction,
  isViewMethod,
  packRecords,
  type HostToPage,
  type PageToHost,
  type ViewAction,
  type ViewConfig,
} from "./viewProtocol";

export const VIEW_TYPE = "dshQuery.sessionView";

/** What the panels need from the extension. */
export interface SessionViewHost {
  request<M extends Method>(method: M, params: Params<M>): Promise<Result<M>>;
  windowMax(): number;
  traceEvent(sessionId: string, seq: number): Promise<void>;
  traceSession(sessionId: string): Promise<void>;
}

const ACTIONS: ViewAction["action"][] = ["traceEvent", "traceSession", "openSession", "openLink"];

/** The page's HTML: the bundle as the only script (by nonce), styles inline or from the
 * extension, images from the extension or data: URIs, nothing else. */
export function sessionViewHtml(config: ViewConfig, script: string, cspSource: string, nonce: string): string {
  const csp = [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    `style-src ${cspSource} 'unsafe-inline'`,
    `img-src ${cspSource} data:`,
  ].join("; ");
  const attr = (s: string) => s.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;");
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${attr(csp)}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${attr(config.sessionId)}</title>
</head>
<body>
<div id="app" data-config="${attr(JSON.stringify(config))}"></div>
<script nonce="${nonce}" src="${attr(script)}"></script>
</body>
</html>`;
}

export class SessionViews implements vscode.Disposable {
  private readonly panels = new Map<string, vscode.WebviewPanel>();

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly host: SessionViewHost,
  ) {}

  /** Shows the session's panel (a new one, or the open one brought forward), at ``seq`` if given. */
  open(sessionId: string, seq?: number): void {
    const open = this.panels.get(sessionId);
    if (open) {
      open.reveal(undefined, false);
      if (seq !== undefined) {
        void open.webview.postMessage({ type: "reveal", seq } satisfies HostToPage);
      }
      return;
    }
    const dist = vscode.Uri.joinPath(this.extensionUri, "dist");
    const panel = vscode.window.createWebviewPanel(
      VIEW_TYPE,
      `Session ${shortId(sessionId)}`,
      { viewColumn: vscode.ViewColumn.Active, preserveFocus: false },
      { enableScripts: true, localResourceRoots: [dist], retainContextWhenHidden: true },
    );
    const config: ViewConfig = { sessionId, windowMax: this.host.windowMax(), actions: ACTIONS };
    if (seq !== undefined) {
      config.reveal = seq;
    }
    const script = panel.webview.asWebviewUri(vscode.Uri.joinPath(dist, "session_view.js")).toString();
    panel.webview.html = sessionViewHtml(config, script, panel.webview.cspSource, randomBytes(18).toString("base64url"));
    panel.webview.onDidReceiveMessage((m: PageToHost) => void this.receive(panel, sessionId, m));
    panel.onDidDispose(() => this.panels.delete(sessionId));
    this.panels.set(sessionId, panel);
  }

  /** The server says these sessions changed (or everything did): the open pages read again. */
  refresh(sessionIds?: ReadonlySet<string>): void {
    for (const [id, panel] of this.panels) {
      if (!sessionIds || sessionIds.has(id)) {
        void panel.webview.postMessage({ type: "refresh" } satisfies HostToPage);
      }
    }
  }

  private async receive(panel: vscode.WebviewPanel, sessionId: string, m: PageToHost): Promise<void> {
    if (m.type === "request") {
      const reply = (answer: Omit<Extract<HostToPage, { type: "response" }>, "type" | "id">) =>
        void panel.webview.postMessage({ type: "response", id: m.id, ...answer } satisfies HostToPage);
      if (!isViewMethod(m.method) || !m.params || m.params.sessionId !== sessionId) {
        reply({ error: { message: "the session view asked for something it may not read" } });
        return;
      }
      try {
        // The page's params are checked above for the session only; the server checks the rest.
        const result: unknown = await this.host.request(m.method, m.params as unknown as Params<typeof m.method>);
        const records = m.method === "sessionQuery/listEvents" && Array.isArray(result);
        reply({ result: records ? packRecords(sessionId, result as SessionEventRecord[]) : result });
      } catch (err) {
        reply({ error: { message: formatError(err), code: describeError(err).dataCode } });
      }
    } else if (m.type === "action" && isViewAction(m.request)) {
      await this.act(m.request);
    }
  }

  private async act(a: ViewAction): Promise<void> {
    switch (a.action) {
      case "traceEvent":
        await this.host.traceEvent(a.sessionId, a.seq);
        return;
      case "traceSession":
        await this.host.traceSession(a.sessionId);
        return;
      case "openSession":
        this.open(a.sessionId);
        return;
      case "openLink":
        await vscode.env.openExternal(vscode.Uri.parse(a.href));
        return;
    }
  }

  dispose(): void {
    for (const panel of this.panels.values()) {
      panel.dispose();
    }
    this.panels.clear();
  }
}

/** A tab title that stays short: long ids keep their end (Claude's are paths like x/agent-y). */
function shortId(id: string): string {
  return id.length <= 32 ? id : `…${id.slice(-31)}`;
}
