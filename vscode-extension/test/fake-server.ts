// A fake of the server's tree methods for unit tests: sessions (paged with a "more" node),
// events of a session, node ids that encode what they need, and a request log.

import type {
  Method,
  Params,
  Result,
  Rpc,
  TreeChildrenParams,
  TreeChildrenResult,
  TreeNode,
  TreeParentParams,
  TreeParentResult,
} from "../src/protocol";

export interface FakeSession {
  id: string;
  events: { type: string; surface: string }[];
  live?: boolean;
}

export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: { code: string },
  ) {
    super(message);
  }
}

export class FakeTreeServer implements Rpc {
  readonly log: { method: string; params: unknown }[] = [];
  failWith: Error | undefined;
  pageSize = 100;

  constructor(public sessions: FakeSession[]) {}

  private sessionNode(s: FakeSession): TreeNode {
    return {
      id: `s:${JSON.stringify(s.id)}`,
      label: s.id,
      description: `${s.events.length} events${s.live ? " · live" : ""}`,
      icon: s.live ? "circle-filled" : "history",
      collapsible: "collapsed",
      contextValue: s.live ? "session.live" : "session",
      resource: { sessionId: s.id },
    };
  }

  private eventNode(s: FakeSession, seq: number): TreeNode {
    const e = s.events[seq];
    return {
      id: `e:${JSON.stringify([s.id, seq])}`,
      label: `#${seq} ${e.type}`,
      description: e.surface,
      icon: e.surface === "current" ? "pass-filled" : "circle-slash",
      collapsible: "none",
      contextValue: "event",
      surface: e.surface as TreeNode["surface"],
      resource: { sessionId: s.id, seq },
    };
  }

  private page(offset: number): TreeNode[] {
    const nodes = this.sessions.slice(offset, offset + this.pageSize).map((s) => this.sessionNode(s));
    if (offset + this.pageSize < this.sessions.length) {
      nodes.push({ id: `more:${offset + this.pageSize}`, label: "more…", collapsible: "collapsed", contextValue: "more" });
    }
    return nodes;
  }

  async request<M extends Method>(method: M, params: Params<M>): Promise<Result<M>> {
    this.log.push({ method, params: JSON.parse(JSON.stringify(params)) });
    await Promise.resolve();
    if (this.failWith) {
      throw this.failWith;
    }
    // M is not narrowed by comparing `method`: the casts say what this branch answers.
    if (method === "sessionQuery/treeChildren") {
      const result: TreeChildrenResult = { nodes: this.children(params as TreeChildrenParams) };
      return result as Result<M>;
    }
    if (method === "sessionQuery/treeParent") {
      return this.parent(params as TreeParentParams) as Result<M>;
    }
    throw new RpcError(-32601, `unknown method ${method}`);
  }

  private children(params: TreeChildrenParams): TreeNode[] {
    if (params.view === "sessions") {
      if (params.nodeId === undefined || params.nodeId === null) {
        return this.page(0);
      }
      if (params.nodeId.startsWith("more:")) {
        return this.page(Number(params.nodeId.slice(5)));
      }
      if (params.nodeId.startsWith("s:")) {
        const id = JSON.parse(params.nodeId.slice(2));
        const s = this.sessions.find((x) => x.id === id);
        if (!s) {
          return [{ id: `err:${id}`, label: `session "${id}" not found`, collapsible: "none", contextValue: "error" }];
        }
        return s.events.map((_, seq) => this.eventNode(s, seq));
      }
      return [];
    }
    if (params.view === "events") {
      const s = this.sessions.find((x) => x.id === params.args?.sessionId);
      return s && params.nodeId === undefined ? s.events.map((_, seq) => this.eventNode(s, seq)) : [];
    }
    return [];
  }

  private parent(params: TreeParentParams): TreeParentResult {
    if (params.view === "sessions" && params.nodeId.startsWith("e:")) {
      const [id] = JSON.parse(params.nodeId.slice(2));
      return { nodeId: `s:${JSON.stringify(id)}` };
    }
    if (params.view === "sessions" && params.nodeId.startsWith("s:")) {
      const id = JSON.parse(params.nodeId.slice(2));
      const index = this.sessions.findIndex((x) => x.id === id);
      const page = Math.floor(index / this.pageSize);
      return page === 0 ? {} : { nodeId: `more:${page * this.pageSize}` };
    }
    if (params.view === "sessions" && params.nodeId.startsWith("more:")) {
      const offset = Number(params.nodeId.slice(5));
      return offset <= this.pageSize ? {} : { nodeId: `more:${offset - this.pageSize}` };
    }
    return {};
  }
}
