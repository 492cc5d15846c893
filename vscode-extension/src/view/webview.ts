// The page's host inside a VS Code webview: requests travel to the extension (sessionView.ts)
// and back by id; the extension forwards them to the server.

import {
  isPackedRecords,
  unpackRecords,
  type HostToPage,
  type PageToHost,
  type ViewAction,
  type ViewConfig,
  type ViewMethod,
} from "../viewProtocol";
import { HostError, type Host } from "./host";

interface VsCodeApi {
  postMessage(message: PageToHost): void;
}

declare function acquireVsCodeApi(): VsCodeApi;

export class WebviewHost implements Host {
  private readonly api = acquireVsCodeApi();
  private next = 1;
  private readonly pending = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  private revealListener: (seq: number) => void = () => undefined;
  private refreshListener: () => void = () => undefined;

  constructor(readonly config: ViewConfig) {
    window.addEventListener("message", (e: MessageEvent<HostToPage>) => this.receive(e.data));
    this.api.postMessage({ type: "ready" });
  }

  private receive(message: HostToPage): void {
    if (message.type === "reveal") {
      this.revealListener(message.seq);
    } else if (message.type === "refresh") {
      this.refreshListener();
    } else if (message.type === "response") {
      const waiting = this.pending.get(message.id);
      this.pending.delete(message.id);
      if (!waiting) {
        return;
      }
      if (message.error) {
        waiting.reject(new HostError(message.error.message, message.error.code));
      } else {
        waiting.resolve(isPackedRecords(message.result) ? unpackRecords(message.result) : message.result);
      }
    }
  }

  request<R>(method: ViewMethod, params: Record<string, unknown>): Promise<R> {
    const id = this.next++;
    return new Promise<R>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.api.postMessage({ type: "request", id, method, params });
    });
  }

  can(action: ViewAction["action"]): boolean {
    return this.config.actions.includes(action);
  }

  act(action: ViewAction): void {
    this.api.postMessage({ type: "action", request: action });
  }

  onReveal(listener: (seq: number) => void): void {
    this.revealListener = listener;
  }

  onRefresh(listener: () => void): void {
    this.refreshListener = listener;
  }
}
