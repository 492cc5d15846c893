// One generic TreeDataProvider for every server-computed tree (protocol.md §6): it renders the
// nodes of `sessionQuery/treeChildren` lazily and finds parents with `sessionQuery/treeParent`.
// The server owns the content; this class only keeps the elements it handed to VS Code so that
// refreshes can be scoped and element identity stays stable (expansion survives a refresh).

import * as vscode from "vscode";
import { formatError, isCancellation, isMethodNotFound } from "./errors";
import { COMMANDS } from "./ids";
import { Methods, type Rpc, type ServerView, type TreeChildrenParams, type TreeNode } from "./protocol";

export interface TreeTarget {
  view: ServerView;
  args?: Record<string, unknown>;
}

export interface TreeElement {
  /** Unique within this tree (the node id, suffixed only if the server repeated an id). */
  uid: string;
  node: TreeNode;
  parent: TreeElement | undefined;
  /** The target generation this element belongs to. */
  generation: number;
  /** True for nodes the client made itself (request failures). */
  local?: boolean;
}

export const OPEN_EVENT_COMMAND = COMMANDS.openEvent;

/** Client command ids that a server-supplied node command may name. */
export type CommandFilter = (commandId: string) => boolean;

function collapsibleState(c: TreeNode["collapsible"]): vscode.TreeItemCollapsibleState {
  switch (c) {
    case "collapsed":
      return vscode.TreeItemCollapsibleState.Collapsed;
    case "expanded":
      return vscode.TreeItemCollapsibleState.Expanded;
    default:
      return vscode.TreeItemCollapsibleState.None;
  }
}

export function isErrorNode(node: TreeNode): boolean {
  return node.contextValue === "error";
}

export type NodeKind = "session" | "event" | "error" | "other";

/**
 * What a node shows, from its contextValue (`session.live`, `event.current`, `group.events`,
 * `more`, `error`, ...); a node without one is classified by its resource.
 */
export function nodeKind(node: TreeNode): NodeKind {
  const cv = node.contextValue;
  if (cv === "error") {
    return "error";
  }
  if (cv !== undefined) {
    if (cv === "session" || cv.startsWith("session.")) {
      return "session";
    }
    if (cv === "event" || cv.startsWith("event.")) {
      return "event";
    }
    return "other";
  }
  if (node.resource && typeof node.resource.sessionId === "string") {
    return node.resource.seq === undefined ? "session" : "event";
  }
  return "other";
}

/** What selecting a node means: a session (its Events and lineage) or an event (its trace). */
export function selectionOf(node: TreeNode): { sessionId: string; seq?: number } | undefined {
  const r = node.resource;
  if (!r || typeof r.sessionId !== "string") {
    return undefined;
  }
  const kind = nodeKind(node);
  if (kind === "event" && typeof r.seq === "number") {
    return { sessionId: r.sessionId, seq: r.seq };
  }
  // a session, or a session's own groups ("Events", "Lineage")
  if (kind === "session" || (kind === "other" && r.seq === undefined && (node.contextValue ?? "").startsWith("group."))) {
    return { sessionId: r.sessionId };
  }
  return undefined;
}

/** The command a click runs: the server's when the client knows it, else open the event. */
export function nodeCommand(node: TreeNode, known: CommandFilter): vscode.Command | undefined {
  if (node.command && typeof node.command.command === "string" && known(node.command.command)) {
    return {
      title: node.command.title ?? node.command.command,
      command: node.command.command,
      arguments: Array.isArray(node.command.arguments) ? node.command.arguments : [],
    };
  }
  const r = node.resource;
  if (r && typeof r.sessionId === "string" && typeof r.seq === "number" && !isErrorNode(node)) {
    return { title: "Open Event", command: OPEN_EVENT_COMMAND, arguments: [{ sessionId: r.sessionId, seq: r.seq }] };
  }
  return undefined;
}

/**
 * The theme colour of an event's class (semantics.md §1.8), the same colours the session view
 * uses (src/view/style.css): current green, shadowed red, log-only muted. The description says
 * the class as a word too, so the colour never carries it alone.
 */
export const SURFACE_COLORS: Record<string, string> = {
  current: "charts.green",
  shadowed: "gitDecoration.deletedResourceForeground",
  "log-only": "descriptionForeground",
};

export function toTreeItem(el: TreeElement, known: CommandFilter): vscode.TreeItem {
  const node = el.node;
  const item = new vscode.TreeItem(node.label, collapsibleState(node.collapsible));
  item.id = el.uid;
  if (node.description !== undefined) {
    item.description = node.description;
  }
  if (node.tooltip !== undefined) {
    item.tooltip = node.tooltip;
  }
  if (isErrorNode(node)) {
    item.iconPath = new vscode.ThemeIcon(node.icon || "error", new vscode.ThemeColor("list.errorForeground"));
    item.tooltip = node.tooltip ?? node.label;
  } else if (node.icon) {
    const color =
      node.surface !== undefined ? SURFACE_COLORS[node.surface] : node.icon === "warning" ? "list.warningForeground" : undefined;
    item.iconPath = new vscode.ThemeIcon(node.icon, color ? new vscode.ThemeColor(color) : undefined);
  }
  if (node.contextValue !== undefined) {
    item.contextValue = node.contextValue;
  }
  const command = nodeCommand(node, known);
  if (command) {
    item.command = command;
  }
  return item;
}

export interface TreeHooks {
  /** Called with the roots each time they are loaded for the current target. */
  onRoots?(nodes: TreeNode[]): void;
  /** Rows of the client's own shown above the server's roots (the unreadable sessions). */
  prepend?(): TreeNode[];
}

const ROOT = "\u0000root";

export class ServerTreeProvider implements vscode.TreeDataProvider<TreeElement>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<TreeElement | TreeElement[] | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  /** Every element handed out for the current target, by uid. */
  private readonly elements = new Map<string, TreeElement>();
  /** The current children of each loaded parent (ROOT for the roots). */
  private readonly kids = new Map<string, TreeElement[]>();
  private generation = 0;
  private target: TreeTarget | undefined;

  constructor(
    readonly name: string,
    private readonly rpc: () => Rpc | undefined,
    private readonly known: CommandFilter,
    target?: TreeTarget,
    private readonly hooks: TreeHooks = {},
  ) {
    this.target = target;
  }

  dispose(): void {
    this.changed.dispose();
  }

  getTarget(): TreeTarget | undefined {
    return this.target;
  }

  /** Shows another tree (or nothing); forgets every element of the previous one. */
  setTarget(target: TreeTarget | undefined): void {
    this.target = target;
    this.generation++;
    this.elements.clear();
    this.kids.clear();
    this.changed.fire(undefined);
  }

  /** Re-renders everything (roots are fetched again; expanded nodes keep their state by id). */
  refresh(): void {
    this.changed.fire(undefined);
  }

  getTreeItem(el: TreeElement): vscode.TreeItem {
    return toTreeItem(el, this.known);
  }

  private key(parent: TreeElement | undefined): string {
    return parent === undefined ? ROOT : parent.uid;
  }

  /** True while the element is still listed under its parent, and that parent too. */
  isLive(el: TreeElement): boolean {
    for (let e: TreeElement | undefined = el; e; e = e.parent) {
      if (e.generation !== this.generation || !(this.kids.get(this.key(e.parent)) ?? []).includes(e)) {
        return false;
      }
    }
    return true;
  }

  /** Loaded elements that are still shown (for scoping refreshes and reveals). */
  loaded(): TreeElement[] {
    return [...this.elements.values()].filter((el) => this.isLive(el));
  }

  private params(nodeId?: string): TreeChildrenParams {
    const t = this.target as TreeTarget;
    const p: TreeChildrenParams = { view: t.view };
    if (nodeId !== undefined) {
      p.nodeId = nodeId;
    }
    if (t.args !== undefined) {
      p.args = t.args;
    }
    return p;
  }

  private localError(parent: TreeElement | undefined, message: string, generation: number): TreeElement {
    const uid = `client-error:${parent?.uid ?? ""}`;
    const node: TreeNode = { id: uid, label: message, collapsible: "none", contextValue: "error", icon: "error", tooltip: message };
    return { uid, node, parent, generation, local: true };
  }

  private async fetch(parent: TreeElement | undefined): Promise<TreeNode[]> {
    const rpc = this.rpc();
    if (!rpc || !this.target) {
      return [];
    }
    const result = await rpc.request(Methods.treeChildren, this.params(parent?.node.id));
    return Array.isArray(result?.nodes) ? result.nodes.filter((n) => n && typeof n === "object") : [];
  }

  /** Turns nodes into the children of `parent`, reusing element objects already known by uid. */
  private adopt(parent: TreeElement | undefined, nodes: TreeNode[], generation: number): TreeElement[] {
    const key = this.key(parent);
    const previous = this.kids.get(key) ?? [];
    const seen = new Set<string>();
    const children = nodes.map((node) => {
      const id = String(node.id);
      let uid = id;
      for (let n = 2; ; n++) {
        const other = this.elements.get(uid);
        const takenElsewhere = other !== undefined && other.parent !== parent && this.isLive(other);
        if (!seen.has(uid) && !takenElsewhere) {
          break;
        }
        uid = `${id}#${n}`;
      }
      seen.add(uid);
      let el = this.elements.get(uid);
      if (el && el.parent === parent && el.generation === generation) {
        el.node = node;
      } else {
        el = { uid, node, parent, generation };
        this.elements.set(uid, el);
      }
      return el;
    });
    this.kids.set(key, children);
    for (const old of previous) {
      if (!children.includes(old)) {
        this.forget(old);
      }
    }
    return children;
  }

  private forget(el: TreeElement): void {
    if (this.elements.get(el.uid) === el) {
      this.elements.delete(el.uid);
    }
    for (const child of this.kids.get(el.uid) ?? []) {
      this.forget(child);
    }
    this.kids.delete(el.uid);
  }

  async getChildren(parent?: TreeElement): Promise<TreeElement[]> {
    if (!this.target || (parent && (parent.local || parent.generation !== this.generation))) {
      return [];
    }
    const generation = this.generation;
    let nodes: TreeNode[];
    try {
      nodes = await this.fetch(parent);
    } catch (err) {
      if (generation !== this.generation || isCancellation(err)) {
        return [];
      }
      const message = isMethodNotFound(err)
        ? "This dsh-query-server has no tree views (sessionQuery/treeChildren): update it."
        : formatError(err);
      const el = this.localError(parent, message, generation);
      this.kids.set(this.key(parent), [el]);
      return [el];
    }
    if (generation !== this.generation) {
      return [];
    }
    const children = this.adopt(parent, nodes, generation);
    if (!parent) {
      this.hooks.onRoots?.(nodes);
      const extra = (this.hooks.prepend?.() ?? []).map(
        (node): TreeElement => ({ uid: String(node.id), node, parent: undefined, generation, local: true }),
      );
      if (extra.length > 0) {
        const all = [...extra, ...children];
        this.kids.set(ROOT, all);
        return all;
      }
    }
    return children;
  }

  /** The loaded parent; for an element loaded without one, asks `sessionQuery/treeParent`. */
  async getParent(el: TreeElement): Promise<TreeElement | undefined> {
    if (el.parent !== undefined || el.local || this.kids.get(ROOT)?.includes(el)) {
      return el.parent;
    }
    return this.parentOf(el.node.id);
  }

  private async parentOf(nodeId: string): Promise<TreeElement | undefined> {
    const rpc = this.rpc();
    if (!rpc || !this.target) {
      return undefined;
    }
    const result = await rpc.request(Methods.treeParent, { view: (this.target as TreeTarget).view, nodeId });
    const parentId = result?.nodeId;
    if (typeof parentId !== "string") {
      return undefined;
    }
    return this.findById(parentId);
  }

  /** The element of a server node id, loading its ancestors (via treeParent) as needed. */
  async findById(nodeId: string): Promise<TreeElement | undefined> {
    const known = this.loaded().find((el) => el.node.id === nodeId);
    if (known) {
      return known;
    }
    const parent = await this.parentOf(nodeId);
    const siblings = await this.getChildren(parent);
    return siblings.find((s) => s.node.id === nodeId);
  }

  /** A shown element for `sessionId` itself (not one of its events), if any. */
  findSession(sessionId: string): TreeElement | undefined {
    return this.loaded().find((el) => nodeKind(el.node) === "session" && el.node.resource?.sessionId === sessionId);
  }

  findEvent(sessionId: string, seq: number): TreeElement | undefined {
    return this.loaded().find(
      (el) => nodeKind(el.node) === "event" && el.node.resource?.sessionId === sessionId && el.node.resource.seq === seq,
    );
  }

  /** Does this tree show anything of these sessions? */
  touches(sessionIds: Set<string>): boolean {
    const args = this.target?.args;
    if (args && typeof args.sessionId === "string" && sessionIds.has(args.sessionId)) {
      return true;
    }
    return this.loaded().some((el) => el.node.resource !== undefined && sessionIds.has(el.node.resource.sessionId));
  }

  /**
   * Scoped refresh after `didChange {sessionIds}`: the siblings of each affected session node are
   * fetched again. If they are the same nodes, only the affected nodes (and their expanded
   * subtrees) re-render; otherwise their parent does. Returns what was fired (undefined = roots).
   */
  async refreshSessions(sessionIds: Set<string>): Promise<(TreeElement | undefined)[]> {
    const affected = this.loaded().filter(
      (el) => nodeKind(el.node) === "session" && el.node.resource !== undefined && sessionIds.has(el.node.resource.sessionId),
    );
    const groups = new Map<TreeElement | undefined, TreeElement[]>();
    for (const el of affected) {
      groups.set(el.parent, [...(groups.get(el.parent) ?? []), el]);
    }
    const fired: (TreeElement | undefined)[] = [];
    const generation = this.generation;
    for (const [parent, els] of groups) {
      let nodes: TreeNode[] | undefined;
      try {
        nodes = await this.fetch(parent);
      } catch {
        nodes = undefined;
      }
      if (generation !== this.generation) {
        return fired;
      }
      const current = (this.kids.get(this.key(parent)) ?? []).map((e) => e.node.id);
      const same =
        nodes !== undefined &&
        nodes.length === current.length &&
        nodes.every((n, i) => String(n.id) === current[i]);
      if (same && nodes) {
        const byId = new Map(nodes.map((n) => [String(n.id), n]));
        for (const e of els) {
          e.node = byId.get(e.node.id) ?? e.node;
        }
        this.changed.fire(els);
        fired.push(...els);
      } else {
        this.changed.fire(parent);
        fired.push(parent);
      }
    }
    return fired;
  }
}
