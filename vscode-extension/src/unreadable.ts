// Unreadable sessions (docs/semantics.md §6.5 [ours]): persisted logs a search left out because
// they are damaged, and transcripts a listing skipped. The Sessions view shows them as a warning
// badge and a "Show unreadable sessions" item at the top (its tooltip names each file); the item,
// or the command, lists them in a quick pick, and picking one opens its file.

import * as vscode from "vscode";
import { COMMANDS } from "./ids";
import { Methods, type Rpc, type TreeNode, type UnreadableSession } from "./protocol";

const SHOW_UNREADABLE = COMMANDS.showUnreadable;
const NODE_ID = "client:unreadable";

export interface UnreadableReport {
  unreadable?: UnreadableSession[];
  unreadableCount?: number;
}

/** The message without the file it ends with (the item names the file on its own line). */
export function reason(entry: UnreadableSession): string {
  const suffix = entry.path ? ` (${entry.path})` : "";
  return suffix && entry.message.endsWith(suffix) ? entry.message.slice(0, -suffix.length) : entry.message;
}

export function plural(count: number): string {
  return `${count} unreadable session${count === 1 ? "" : "s"}`;
}

/** The Sessions view's first row while any session is unreadable (none otherwise). */
export function unreadableNode(entries: UnreadableSession[], count: number): TreeNode | undefined {
  if (count === 0) {
    return undefined;
  }
  const lines = entries.map((e) => `${e.sessionId}: ${reason(e)}${e.path ? `\n    ${e.path}` : ""}`);
  if (count > entries.length) {
    lines.push(`… and ${count - entries.length} more`);
  }
  return {
    id: NODE_ID,
    label: `Show unreadable sessions (${count})`,
    description: "damaged logs, left out",
    tooltip: `${plural(count)}, left out of the list or the search:\n${lines.join("\n")}`,
    icon: "warning",
    collapsible: "none",
    contextValue: "unreadable",
    command: { title: "Show Unreadable Sessions", command: SHOW_UNREADABLE },
  };
}

/** What the server reports as unreadable, merged from its status and the last search. */
export class UnreadableSessions {
  private entries: UnreadableSession[] = [];
  private count = 0;
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChange = this.changed.event;

  private view: { badge?: vscode.ViewBadge } | undefined;

  /** The view whose badge counts them (the Sessions view, made after this). */
  attach(view: { badge?: vscode.ViewBadge }): void {
    this.view = view;
  }

  dispose(): void {
    this.changed.dispose();
  }

  node(): TreeNode | undefined {
    return unreadableNode(this.entries, this.count);
  }

  /** Ask the server's status (cheap: no I/O there) and show what it names. */
  async refresh(rpc: Rpc | undefined): Promise<void> {
    if (!rpc) {
      return this.set([], 0);
    }
    try {
      this.note(await rpc.request(Methods.status, {}), true);
    } catch {
      // a server without status: nothing to show
    }
  }

  /** A result that names unreadable sessions (a search page, or the status). */
  note(report: UnreadableReport, replace = false): void {
    const named = Array.isArray(report.unreadable) ? report.unreadable : [];
    const count = typeof report.unreadableCount === "number" ? report.unreadableCount : named.length;
    if (replace) {
      return this.set(named, count);
    }
    const known = new Set(this.entries.map((e) => `${e.sessionId}\u0000${e.path ?? ""}`));
    const extra = named.filter((e) => !known.has(`${e.sessionId}\u0000${e.path ?? ""}`));
    if (extra.length > 0) {
      this.set([...this.entries, ...extra], this.count + extra.length + Math.max(0, count - named.length));
    }
  }

  private set(entries: UnreadableSession[], count: number): void {
    const same =
      count === this.count &&
      entries.length === this.entries.length &&
      entries.every((e, i) => e.sessionId === this.entries[i].sessionId && e.message === this.entries[i].message);
    this.entries = entries;
    this.count = count;
    if (this.view) this.view.badge = count > 0 ? { value: count, tooltip: plural(count) } : undefined;
    if (!same) {
      this.changed.fire();
    }
  }

  /** The quick pick of every unreadable session; picking one with a file opens it. */
  async show(): Promise<void> {
    if (this.count === 0) {
      void vscode.window.showInformationMessage("No unreadable sessions: every stored log could be read.");
      return;
    }
    interface Item extends vscode.QuickPickItem {
      path?: string;
    }
    const items: Item[] = this.entries.map((e) => ({
      label: `$(warning) ${e.sessionId}`,
      description: reason(e),
      detail: e.path,
      path: e.path,
    }));
    if (this.count > this.entries.length) {
      items.push({ label: `… and ${this.count - this.entries.length} more`, description: "not listed" });
    }
    const picked = await vscode.window.showQuickPick(items, {
      title: `${plural(this.count)}, left out of the list or the search`,
      placeHolder: "Pick one to open its file",
      matchOnDescription: true,
      matchOnDetail: true,
    });
    if (picked?.path) {
      await vscode.window.showTextDocument(vscode.Uri.file(picked.path), { preview: true });
    }
  }
}
