// Entry point of the Usage page bundle (dist/usage_view.js, docs/usage.md §5): its host is the
// extension (usageView.ts), reached by messages; requests travel by id and come back the same way.

import uplotCss from "uplot/dist/uPlot.min.css";
import type { HostToPage, UsageConfig, UsageMethod, UsagePageToHost } from "../../viewProtocol";
import type { SessionTitleObservationResult, UsageSummary } from "../../protocol.gen";
import { HostError } from "../host";
import css from "../style.css";
import usageCss from "./style.css";
import { UsagePage, type UsageHost } from "./page";

interface VsCodeApi {
  postMessage(message: UsagePageToHost): void;
}

declare function acquireVsCodeApi(): VsCodeApi;

performance.mark("dsh-start");

class WebviewUsageHost implements UsageHost {
  private readonly api = acquireVsCodeApi();
  private next = 1;
  private readonly pending = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  private refreshListener: () => void = () => undefined;
  readonly timeZone: string;

  constructor(config: UsageConfig) {
    this.timeZone = config.timeZone;
    window.addEventListener("message", (e: MessageEvent<HostToPage>) => this.receive(e.data));
    this.api.postMessage({ type: "ready" });
  }

  private receive(message: HostToPage): void {
    if (message.type === "refresh") {
      this.refreshListener();
    } else if (message.type === "response") {
      const waiting = this.pending.get(message.id);
      this.pending.delete(message.id);
      if (message.error) {
        waiting?.reject(new HostError(message.error.message, message.error.code));
      } else {
        waiting?.resolve(message.result);
      }
    }
  }

  private ask<T>(method: UsageMethod, params: Record<string, unknown>): Promise<T> {
    const id = this.next++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.api.postMessage({ type: "request", id, method, params });
    });
  }

  summary(params: Record<string, unknown>): Promise<UsageSummary> {
    return this.ask("sessionQuery/usageSummary", params);
  }

  async titles(sessionIds: string[]): Promise<Map<string, string>> {
    const found = new Map<string, string>();
    const results = await this.ask<SessionTitleObservationResult[]>("sessionQuery/readTitles", { sessionIds });
    for (const r of results) {
      const title = r.value?.title?.title;
      if (r.status === "fulfilled" && title) {
        found.set(r.sessionId, title);
      }
    }
    return found;
  }

  openSession(sessionId: string): void {
    this.api.postMessage({ type: "action", request: { action: "openSession", sessionId } });
  }

  onRefresh(listener: () => void): void {
    this.refreshListener = listener;
  }
}

function boot(): void {
  const style = document.createElement("style");
  style.textContent = uplotCss + "\n" + css + "\n" + usageCss;
  document.head.append(style);
  const app = document.getElementById("app");
  if (!app) {
    return;
  }
  const host = new WebviewUsageHost(JSON.parse(app.dataset.config ?? "{}") as UsageConfig);
  void new UsagePage(host, app).load();
}

if (document.readyState === "loading") {
  document.addEventListener("DOMContentLoaded", boot);
} else {
  boot();
}
