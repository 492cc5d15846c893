// The pieces every command needs, created once in activate().

import type * as vscode from "vscode";
import type { SessionDocumentProvider } from "./documents";
import type { SessionViews } from "./sessionView";
import type { UsageView } from "./usageView";
import type { UnreadableSessions } from "./unreadable";
import type { SessionRef } from "./refs";
import type { ServerManager } from "./server";
import type { ServerTreeProvider, TreeElement } from "./tree";

export interface Views {
  sessions: ServerTreeProvider;
  events: ServerTreeProvider;
  trace: ServerTreeProvider;
  sessionsView: vscode.TreeView<TreeElement>;
  eventsView: vscode.TreeView<TreeElement>;
  traceView: vscode.TreeView<TreeElement>;
}

export interface Ctx {
  server: ServerManager;
  output: vscode.OutputChannel;
  docs: SessionDocumentProvider;
  /** The session view panels (docs/views.md §3). */
  sessionViews: SessionViews;
  /** The Usage view (docs/usage.md §5). */
  usageView: UsageView;
  views: Views;
  /** The sessions the server could not read (a badge and an item in the Sessions view). */
  unreadable: UnreadableSessions;
  /** The session (and event) the user last selected in any view. */
  selection: { session?: string; event?: SessionRef };
  showSession(sessionId: string, opts?: { focus?: boolean; trace?: boolean }): Promise<void>;
  traceSession(sessionId: string): Promise<void>;
  traceEvent(sessionId: string, seq: number): Promise<void>;
  /** An event was selected (a tree row, a search hit): it becomes the selection and the Trace
   *  view shows its trace, without taking the focus. */
  followEvent(sessionId: string, seq: number): void;
}
