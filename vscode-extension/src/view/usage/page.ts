// The Usage page (docs/usage.md §5): tokens and cost per day stacked by model (uPlot, as the
// session view's chart), the totals, tables by project and by agent, and the sessions that used
// the most, each opening its session view. Everything comes from sessionQuery/usageSummary; every
// number is also a word on the page (colour never says anything alone).

import type { UsageRow, UsageSummary, UsageTotals } from "../../protocol.gen";
import { UsageChart, type Metric } from "./chart";
import { el } from "./dom";
import { compact, dollars, tokens } from "./format";

export interface UsageHost {
  readonly timeZone: string;
  summary(params: Record<string, unknown>): Promise<UsageSummary>;
  /** The titles of these sessions; an untitled or unreadable one is absent. */
  titles(sessionIds: string[]): Promise<Map<string, string>>;
  openSession(sessionId: string): void;
  onRefresh(listener: () => void): void;
}

const RANGES: [string, number | null][] = [
  ["30 days", 30],
  ["90 days", 90],
  ["All time", null],
];
const DAY = 86_400_000;
const SESSION_ROWS = 50;

function button(text: string, onClick: () => void, pressed?: boolean): HTMLButtonElement {
  const b = el("button", "act", text);
  b.type = "button";
  if (pressed !== undefined) {
    b.setAttribute("aria-pressed", String(pressed));
  }
  b.addEventListener("click", onClick);
  return b;
}

export class UsagePage {
  private range: number | null = 30;
  private metric: Metric = "tokens";
  private readonly controls = el("div", "toolbar");
  private readonly totals = el("p", "totals");
  private readonly chartSlot = el("div", "chart-slot");
  private readonly tables = el("div", "tables");
  private readonly status = el("div", "status");
  private days: UsageSummary | undefined;
  // Each load's number; an answer is drawn only while its load is the newest, so a slow answer
  // for the range left behind never overwrites the range the person chose after it.
  private generation = 0;

  constructor(
    private readonly host: UsageHost,
    root: HTMLElement,
  ) {
    const head = el("header", "session-head");
    head.append(el("h1", undefined, "Usage"));
    head.append(el("div", "meta", `Tokens and cost each agent recorded, each API response counted once; days in ${host.timeZone}.`));
    root.append(head, this.controls, this.totals, this.chartSlot, this.tables, this.status);
    host.onRefresh(() => void this.load());
  }

  async load(): Promise<void> {
    const generation = ++this.generation;
    this.drawControls();
    this.status.textContent = "Reading usage…";
    this.status.classList.remove("error");
    const bounds: Record<string, unknown> = { timeZone: this.host.timeZone };
    if (this.range !== null) {
      bounds.since = Date.now() - this.range * DAY;
    }
    try {
      const [days, projects, agents, sessions] = await Promise.all(
        ["day", "cwd", "agent", "session"].map((groupBy) => this.host.summary({ ...bounds, groupBy })),
      );
      if (generation !== this.generation) {
        return;
      }
      performance.mark("dsh-usage-data");
      this.days = days;
      this.drawTotals(days);
      this.drawChart();
      this.tables.replaceChildren(
        this.table("By project", "project", projects.rows, (k) => k ?? "(no project)"),
        this.table("By agent", "agent", agents.rows, (k) => k ?? "(none)"),
        this.table("Sessions", "session", sessions.rows.slice(0, SESSION_ROWS), (k) => k ?? "", true),
      );
      void this.nameSessions(generation);
      const skipped = days.skipped.length ? ` ${days.skipped.length} sessions could not be read.` : "";
      this.status.textContent = `Prices: ${days.prices}; costs are estimates at list prices.${skipped}`;
      performance.mark("dsh-usage-drawn");
    } catch (err) {
      if (generation !== this.generation) {
        return;
      }
      const code = (err as { code?: unknown }).code;
      this.status.textContent = `Could not read usage: ${typeof code === "string" ? `${code}: ` : ""}${(err as Error).message}`;
      this.status.classList.add("error");
    }
  }

  /** Each session row gains its title beside its id once readTitles answers (the rows are drawn
   * without waiting for it); a title that cannot be read leaves the id alone. */
  private async nameSessions(generation: number): Promise<void> {
    const cells = [...this.tables.querySelectorAll<HTMLElement>('.usage-table[data-kind="session"] td.key')];
    const ids = cells.map((c) => c.dataset.sessionId ?? "").filter((id) => id);
    if (!ids.length) {
      return;
    }
    let titles: Map<string, string>;
    try {
      titles = await this.host.titles(ids);
    } catch {
      return;
    }
    if (generation !== this.generation) {
      return;
    }
    for (const cell of cells) {
      const title = titles.get(cell.dataset.sessionId ?? "");
      if (title) {
        cell.append(el("span", "title", title));
        cell.title = title;
      }
    }
  }

  private drawControls(): void {
    const ranges = RANGES.map(([label, days]) =>
      button(label, () => {
        this.range = days;
        void this.load();
      }, this.range === days),
    );
    const metrics = (["tokens", "cost"] as const).map((m) =>
      button(m === "tokens" ? "Tokens" : "Cost", () => {
        this.metric = m;
        this.drawControls();
        this.drawChart();
      }, this.metric === m),
    );
    const group = (label: string, items: HTMLElement[]) => {
      const g = el("div", "group");
      g.setAttribute("role", "group");
      g.setAttribute("aria-label", label);
      g.append(...items);
      return g;
    };
    this.controls.replaceChildren(group("Range", ranges), group("Chart", metrics));
  }

  private drawTotals(days: UsageSummary): void {
    const t = days.total;
    this.totals.replaceChildren();
    const parts: [string, string, string][] = [
      ["responses", String(t.responses), `responses in ${t.sessions} sessions`],
      ["input", compact(t.input), "input"],
      ["cacheRead", compact(t.cacheRead), "cache read"],
      ["cacheWrite", compact(t.cacheWrite), "cache write"],
      ["output", compact(t.output), "output"],
      ["cost", dollars(t), "cost (estimate)"],
    ];
    for (const [key, value, label] of parts) {
      const item = el("span", "total");
      item.dataset.key = key;
      item.dataset.value = key === "cost" ? String(t.costUsd) : String((t as unknown as Record<string, unknown>)[key]);
      item.append(el("strong", undefined, value), ` ${label}`);
      this.totals.append(item);
    }
    if (t.unpricedResponses) {
      this.totals.append(el("span", "total unpriced", `* ${t.unpricedResponses} responses have no price (${t.unpricedModels.join(", ")})`));
    }
  }

  private drawChart(): void {
    if (!this.days) {
      return;
    }
    this.chartSlot.replaceChildren(new UsageChart(this.days.rows, this.metric).root);
    performance.mark("dsh-usage-chart");
  }

  private table(title: string, kind: string, rows: UsageRow[], label: (key: string | null) => string, open = false): HTMLElement {
    const section = el("section", "usage-table");
    section.dataset.kind = kind;
    section.append(el("h2", undefined, title));
    if (!rows.length) {
      section.append(el("p", "note", "No usage recorded in this range."));
      return section;
    }
    const table = el("table");
    const head = el("tr");
    for (const h of [kind, "responses", "input", "cache read", "cache write", "output", "cost", "share of tokens"]) {
      head.append(el("th", undefined, h));
    }
    table.append(el("thead"), el("tbody"));
    table.tHead?.append(head);
    const largest = Math.max(...rows.map((r) => tokens(r.total)), 1);
    for (const row of rows) {
      const key = row.key === null ? null : String(row.key);
      const tr = el("tr");
      const name = el("td", "key");
      if (open && key) {
        name.dataset.sessionId = key;
        // A UUID is known by its first 8 characters, as git shows hashes; the whole id is the tooltip.
        const b = button(/^[0-9a-f]{8}-/.test(key) ? key.slice(0, 8) : key, () => this.host.openSession(key));
        b.title = key;
        b.setAttribute("aria-label", `Open the session view of ${key}`);
        name.append(b);
      } else {
        name.textContent = label(key);
        name.title = label(key);
      }
      tr.append(name, ...this.cells(row.total, largest));
      table.tBodies[0].append(tr);
    }
    section.append(table);
    return section;
  }

  private cells(t: UsageTotals, largest: number): HTMLElement[] {
    const num = (text: string) => el("td", "num", text);
    const share = tokens(t) / largest;
    const bar = el("td", "bar");
    const fill = el("span", "fill");
    fill.style.width = `${Math.round(share * 100)}%`;
    bar.append(fill, el("span", "sr-only", `${Math.round(share * 100)}%`));
    const cost = num(dollars(t));
    if (t.costUsd === null) {
      cost.classList.add("unpriced");
    }
    return [
      num(String(t.responses)),
      num(compact(t.input)),
      num(compact(t.cacheRead)),
      num(compact(t.cacheWrite)),
      num(compact(t.output)),
      cost,
      bar,
    ];
  }
}
