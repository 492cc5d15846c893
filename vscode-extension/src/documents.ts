// Read-only `dsh-session:` documents: event windows (readEvent), surfaces (readSurface) and raw
// logs (readSession), rendered as JSONC.

import * as vscode from "vscode";
import { formatError } from "./errors";
import { Methods, type Rpc } from "./protocol";
import { clampWindow, renderError, renderEventWindow, renderSessionLog, renderSurface, type Rendered } from "./render";
import type { Settings } from "./settings";
import { SCHEME, fromUriParts, toUriParts, type DocTarget } from "./uri";

export function targetUri(target: DocTarget): vscode.Uri {
  return vscode.Uri.from(toUriParts(target));
}

export function uriTarget(uri: vscode.Uri): DocTarget {
  return fromUriParts({ scheme: uri.scheme, query: uri.query });
}

/** Fetches and renders one document. */
export async function renderTarget(rpc: Rpc, target: DocTarget, settings: Settings): Promise<Rendered> {
  switch (target.kind) {
    case "event": {
      if (target.seq === undefined) {
        throw new Error("an event document needs a seq"); // fromUriParts always gives one
      }
      const before = clampWindow(settings.before, settings.readWindowMax);
      const after = clampWindow(settings.after, settings.readWindowMax);
      const w = await rpc.request(Methods.readEvent, {
        sessionId: target.sessionId,
        seq: target.seq,
        before,
        after,
      });
      return renderEventWindow(w, before, after);
    }
    case "surface":
      return renderSurface(await rpc.request(Methods.readSurface, { sessionId: target.sessionId }));
    case "log":
      return renderSessionLog(await rpc.request(Methods.readSession, { sessionId: target.sessionId }));
  }
}

export class SessionDocumentProvider implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  /** Target line of the last rendering of each URI (to place the cursor on the target event). */
  private readonly targetLines = new Map<string, number>();

  constructor(
    private readonly rpc: () => Rpc | undefined,
    private readonly settings: () => Settings,
  ) {}

  dispose(): void {
    this.changed.dispose();
  }

  targetLine(uri: vscode.Uri): number | undefined {
    return this.targetLines.get(uri.toString());
  }

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    let target: DocTarget;
    try {
      target = uriTarget(uri);
    } catch (err) {
      return renderError("this document", (err as Error).message).text;
    }
    const rpc = this.rpc();
    const what = target.kind === "event" ? `event ${target.seq} of session ${JSON.stringify(target.sessionId)}` : `session ${JSON.stringify(target.sessionId)}`;
    if (!rpc) {
      return renderError(what, "The Session Query server is not running.").text;
    }
    try {
      const rendered = await renderTarget(rpc, target, this.settings());
      this.targetLines.set(uri.toString(), rendered.targetLine);
      return rendered.text;
    } catch (err) {
      return renderError(what, formatError(err)).text;
    }
  }

  /** Re-renders the open documents of these sessions (all of them for `undefined`). */
  refresh(sessionIds?: Set<string>): void {
    for (const doc of vscode.workspace.textDocuments) {
      if (doc.uri.scheme !== SCHEME) {
        continue;
      }
      try {
        if (!sessionIds || sessionIds.has(uriTarget(doc.uri).sessionId)) {
          this.changed.fire(doc.uri);
        }
      } catch {
        // not one of ours
      }
    }
  }
}
