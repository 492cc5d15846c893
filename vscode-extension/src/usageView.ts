// The Usage view (docs/usage.md §5): one webview panel showing dist/usage_view.js (src/view/usage/)
// under the session view's Content-Security-Policy. The page may ask for usageSummary and for its
// sessions' titles (readTitles), and may ask to open a session's view; everything else is refused.

import { randomBytes } from "node:crypto";
import * as vscode from "vscode";
import { describeError, formatError } from "./errors";
import type { Params, Result } from "./protocol";
import { sessionViewHtml } from "./sessionView";
import { isUsageMethod, type HostToPage, type UsageConfig, type UsageMethod, type UsagePageToHost } from "./viewProtocol";

export const USAGE_VIEW_TYPE = "dshQuery.usageView";

export interface UsageViewHost {
  request<M extends UsageMethod>(method: M, params: Params<M>): Promise<Result<M>>;
  openSession(sessionId: string): void;
}

/** The editor's IANA zone, for the page's days. */
function timeZone(): string {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
  } catch {
    return "UTC";
  }
}

export class UsageView implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly host: UsageViewHost,
  ) {}

  open(): void {
    if (this.panel) {
      this.panel.reveal(undefined, false);
      return;
    }
    const dist = vscode.Uri.joinPath(this.extensionUri, "dist");
    const panel = vscode.window.createWebviewPanel(
      USAGE_VIEW_TYPE,
      "Usage",
      { viewColumn: vscode.ViewColumn.Active, preserveFocus: false },
      { enableScripts: true, localResourceRoots: [dist], retainContextWhenHidden: true },
    );
    const config: UsageConfig = { timeZone: timeZone() };
    const script = panel.webview.asWebviewUri(vscode.Uri.joinPath(dist, "usage_view.js")).toString();
    const html = sessionViewHtml({ sessionId: "Usage", windowMax: 0, actions: [] }, script, panel.webview.cspSource, randomBytes(18).toString("base64url"));
    panel.webview.html = html.replace(/data-config="[^"]*"/, `data-config="${attr(JSON.stringify(config))}"`);
    panel.webview.onDidReceiveMessage((m: UsagePageToHost) => void this.receive(panel, m));
    panel.onDidDispose(() => (this.panel = undefined));
    this.panel = panel;
  }

  /** The corpus changed: the page reads its totals again. */
  refresh(): void {
    void this.panel?.webview.postMessage({ type: "refresh" } satisfies HostToPage);
  }

  private async receive(panel: vscode.WebviewPanel, m: UsagePageToHost): Promise<void> {
    if (m.type === "request") {
      const reply = (answer: Omit<Extract<HostToPage, { type: "response" }>, "type" | "id">) =>
        void panel.webview.postMessage({ type: "response", id: m.id, ...answer } satisfies HostToPage);
      if (!isUsageMethod(m.method) || !m.params || typeof m.params !== "object") {
        reply({ error: { message: "the Usage view asked for something it may not read" } });
        return;
      }
      try {
        // The server checks the params (groupBy, since, until, timeZone, filters; sessionIds).
        const result = await this.host.request(m.method, m.params as unknown as Params<typeof m.method>);
        reply({ result });
      } catch (err) {
        reply({ error: { message: formatError(err), code: describeError(err).dataCode } });
      }
    } else if (m.type === "action" && m.request?.action === "openSession" && typeof m.request.sessionId === "string") {
      this.host.openSession(m.request.sessionId);
    }
  }

  dispose(): void {
    this.panel?.dispose();
    this.panel = undefined;
  }
}

function attr(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;");
}
