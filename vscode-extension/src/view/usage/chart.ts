// Tokens (or cost) per day, stacked by model: uPlot bars of running sums, the tallest drawn first
// so each model's part shows above the one before. The legend is words with a swatch, and every
// bar's numbers are in the page's tables and in the tooltip: colour never says anything alone.

import uPlot from "uplot";
import type { UsageRow, UsageTotals } from "../../protocol.gen";
import { compact, tokens } from "./format";
import { el } from "./dom";

export type Metric = "tokens" | "cost";
const HEIGHT = 240;
const TOP_MODELS = 6;
const COLOURS = [
  ["--vscode-charts-blue", "#3794ff"],
  ["--vscode-charts-purple", "#b180d7"],
  ["--vscode-charts-green", "#89d185"],
  ["--vscode-charts-orange", "#d18616"],
  ["--vscode-charts-yellow", "#cca700"],
  ["--vscode-charts-red", "#f14c4c"],
  ["--vscode-descriptionForeground", "#888888"],
];

function cssVar(name: string, fallback: string): string {
  const v = getComputedStyle(document.body).getPropertyValue(name).trim();
  return v || fallback;
}

function value(t: UsageTotals, metric: Metric): number {
  return metric === "tokens" ? tokens(t) : t.costUsd === null ? 0 : Number(t.costUsd);
}

/** The days (UTC midnights of the row keys, in seconds) and, per model shown, its values. */
export function stacks(rows: UsageRow[], metric: Metric): { days: number[]; models: string[]; values: number[][] } {
  const dated = rows.filter((r) => typeof r.key === "string");
  const totals = new Map<string, number>();
  for (const row of dated) {
    for (const share of row.byModel ?? []) {
      const m = share.model ?? "unknown";
      totals.set(m, (totals.get(m) ?? 0) + tokens(share.total));
    }
  }
  const ranked = [...totals.entries()].sort((a, b) => b[1] - a[1]).map(([m]) => m);
  const shown = ranked.slice(0, TOP_MODELS);
  const models = ranked.length > TOP_MODELS ? [...shown, "other models"] : shown;
  const values = models.map(() => new Array<number>(dated.length).fill(0));
  dated.forEach((row, i) => {
    for (const share of row.byModel ?? []) {
      const m = share.model ?? "unknown";
      const k = shown.includes(m) ? shown.indexOf(m) : models.length - 1;
      values[k][i] += value(share.total, metric);
    }
  });
  const days = dated.map((r) => Date.parse(`${String(r.key)}T00:00:00Z`) / 1000);
  return { days, models, values };
}

export class UsageChart {
  readonly root: HTMLElement;

  constructor(rows: UsageRow[], metric: Metric) {
    this.root = el("section", "chart");
    this.root.setAttribute("aria-label", `${metric === "tokens" ? "Tokens" : "Cost"} per day, stacked by model`);
    const heading = el("div", "chart-head");
    heading.append(el("h2", undefined, metric === "tokens" ? "Tokens per day, by model" : "Cost per day (USD, estimate), by model"));
    const { days, models, values } = stacks(rows, metric);
    const legend = el("div", "legend");
    models.forEach((m, i) => {
      const item = el("span", "legend-item");
      const swatch = el("span", "swatch swatch-bar");
      swatch.style.background = cssVar(COLOURS[i % COLOURS.length][0], COLOURS[i % COLOURS.length][1]);
      item.append(swatch, el("span", undefined, m));
      legend.append(item);
    });
    heading.append(legend);
    this.root.append(heading);
    if (!days.length) {
      this.root.append(el("p", "note", "No usage recorded in this range: nothing to chart."));
      return;
    }
    const frame = el("div", "plot");
    frame.setAttribute("role", "img");
    frame.setAttribute("aria-label", `${days.length} days; the tables below give every number.`);
    this.root.append(frame);
    requestAnimationFrame(() => this.draw(frame, days, models, values, metric));
  }

  private draw(frame: HTMLElement, days: number[], models: string[], values: number[][], metric: Metric): void {
    // running[k] adds up models 0..k; the tallest is drawn first, each next one over it.
    const running = values.map((_, k) => days.map((_d, i) => values.slice(0, k + 1).reduce((s, v) => s + v[i], 0)));
    const order = running.map((_, k) => running.length - 1 - k);
    const fg = cssVar("--vscode-descriptionForeground", "#888");
    const grid = cssVar("--vscode-editorWidget-border", "rgba(128,128,128,0.25)");
    const bars = uPlot.paths.bars?.({ size: [0.7, 40] });
    const format = (v: number) => (metric === "tokens" ? compact(Math.round(v)) : `$${v.toFixed(2)}`);
    const opts: uPlot.Options = {
      width: Math.max(300, frame.clientWidth),
      height: HEIGHT,
      legend: { show: false },
      cursor: { drag: { x: false, y: false } },
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.05 : 1] } },
      axes: [
        { stroke: fg, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid } },
        { stroke: fg, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid }, size: 60, values: (_u, vals) => vals.map(format) },
      ],
      series: [
        {},
        ...order.map((k) => {
          const [name, fallback] = COLOURS[k % COLOURS.length];
          const colour = cssVar(name, fallback);
          return { label: models[k], stroke: colour, fill: colour, paths: bars, points: { show: false } };
        }),
      ],
    };
    const data: uPlot.AlignedData = [days, ...order.map((k) => running[k])];
    new uPlot(opts, data, frame);
  }
}
