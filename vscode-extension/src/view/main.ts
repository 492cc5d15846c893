// Entry point of the session page bundle (dist/session_view.js, also shipped in the Python
// package for `dsh-query export --html`): picks its host and starts the page.

import uplotCss from "uplot/dist/uPlot.min.css";
import type { ViewConfig } from "../viewProtocol";
import { SessionPage } from "./app";
import { EmbeddedHost, type EmbeddedData, type Host } from "./host";
import css from "./style.css";
import { WebviewHost } from "./webview";

performance.mark("dsh-start");

function boot(): void {
  const style = document.createElement("style");
  style.textContent = uplotCss + "\n" + css;
  document.head.append(style);
  const app = document.getElementById("app");
  if (!app) {
    return;
  }
  const embedded = document.getElementById("dsh-data");
  let host: Host;
  if (embedded) {
    host = new EmbeddedHost(JSON.parse(embedded.textContent ?? "{}") as EmbeddedData);
  } else {
    host = new WebviewHost(JSON.parse(app.dataset.config ?? "{}") as ViewConfig);
  }
  void new SessionPage(host, app).load();
}

if (document.readyState === "loading") {
  document.addEventListener("DOMContentLoaded", boot);
} else {
  boot();
}
