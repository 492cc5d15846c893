// The context chart (docs/views.md §3), drawn from readTimeline alone: x = steps, y = tokens;
// the recorded context solid, the estimate dashed and labelled as one, the context window as a
// dotted line when known, and each compaction a marked drop with its shadowed count. The drops are
// DOM buttons over the canvas, so they can be focused, read and tested.

import uPlot from "uplot";
import type { SessionTimeline, TimelineReplacement } from "../protocol.gen";
import { ESTIMATE_LABEL, RECORDED_LABEL, chartData, count, dividerText, dropX, events, short, stepLines } from "./model";
import { el } from "./render";

const HEIGHT = 220;

export interface ChartChoice {
  step(index: number): void;
  drop(rep: TimelineReplacement): void;
}

function cssVar(name: string, fallback: string): string {
  const v = getComputedStyle(document.body).getPropertyValue(name).trim();
  return v || fallback;
}

interface Palette {
  fg: string;
  grid: string;
  recorded: string;
  estimate: string;
  window: string;
}

function palette(): Palette {
  return {
    fg: cssVar("--vscode-descriptionForeground", "#888"),
    grid: cssVar("--vscode-editorWidget-border", "rgba(128,128,128,0.25)"),
    recorded: cssVar("--vscode-charts-blue", "#3794ff"),
    estimate: cssVar("--vscode-charts-yellow", "#cca700"),
    window: cssVar("--vscode-charts-red", "#f14c4c"),
  };
}

function legendItem(kind: string, text: string): HTMLElement {
  const item = el("span", "legend-item");
  item.append(el("span", `swatch swatch-${kind}`), el("span", undefined, text));
  return item;
}

export class ContextChart {
  readonly root: HTMLElement;
  private plot: uPlot | undefined;
  private readonly tip: HTMLElement;
  private readonly live: HTMLElement;
  private readonly drops: { rep: TimelineReplacement; x: number; node: HTMLButtonElement }[] = [];
  private selected = -1;

  constructor(
    private readonly timeline: SessionTimeline,
    private readonly choose: ChartChoice,
  ) {
    const t = timeline;
    this.root = el("section", "chart");
    this.root.setAttribute("aria-label", "Context chart");
    const heading = el("div", "chart-head");
    heading.append(el("h2", undefined, "Context before each model response"));
    const legend = el("div", "legend");
    const anyRecorded = t.steps.some((s) => s.recorded?.context !== null && s.recorded?.context !== undefined);
    legend.append(
      legendItem("recorded", anyRecorded ? RECORDED_LABEL : `${RECORDED_LABEL}: none recorded`),
      legendItem("estimate", ESTIMATE_LABEL),
    );
    if (t.contextWindow !== null) {
      legend.append(legendItem("window", `context window ${count(t.contextWindow)}`));
    }
    legend.append(legendItem("drop", "compaction (events shadowed)"));
    heading.append(legend);
    this.root.append(heading);
    if (t.peak) {
      const recorded = t.peak.recordedContext !== null ? `; recorded context ${count(t.peak.recordedContext)} tokens` : "";
      const index = t.steps.findIndex((s) => s.seq === t.peak?.seq);
      this.root.append(
        el("p", "peak", `Peak: ≈${count(t.peak.approxTokens)} tokens (estimate) at step ${index + 1} (#${t.peak.seq})${recorded}.`),
      );
    }
    this.tip = el("div", "tip");
    this.tip.hidden = true;
    this.live = el("div", "sr-only");
    this.live.setAttribute("aria-live", "polite");
    if (!t.steps.length) {
      this.root.append(el("p", "note", "No model responses in this session: nothing to chart."));
      return;
    }
    const frame = el("div", "plot");
    frame.tabIndex = 0;
    frame.setAttribute("role", "group");
    frame.setAttribute(
      "aria-label",
      `${t.steps.length} steps. Left and Right arrows move between steps, Enter shows what the model saw then.`,
    );
    frame.addEventListener("keydown", (e) => this.key(e));
    frame.addEventListener("focus", () => this.select(this.selected < 0 ? 0 : this.selected));
    frame.addEventListener("blur", () => (this.tip.hidden = true));
    this.root.append(frame, this.tip, this.live);
    requestAnimationFrame(() => this.draw(frame));
    // The canvas takes its colours when drawn: a theme change (VS Code sets the body's class)
    // draws it again.
    new MutationObserver(() => this.redraw(frame)).observe(document.body, { attributeFilter: ["class"] });
    new ResizeObserver(() => {
      if (this.plot && Math.abs(this.plot.width - frame.clientWidth) > 2) {
        this.plot.setSize({ width: Math.max(200, frame.clientWidth), height: HEIGHT });
      }
    }).observe(frame);
  }

  private redraw(frame: HTMLElement): void {
    this.plot?.destroy();
    this.plot = undefined;
    this.drops.length = 0;
    frame.replaceChildren();
    this.draw(frame);
  }

  private draw(frame: HTMLElement): void {
    const t = this.timeline;
    const p = palette();
    const [xs, recorded, approx, window] = chartData(t);
    const withWindow = t.contextWindow !== null;
    const series: uPlot.Series[] = [
      {},
      { label: RECORDED_LABEL, stroke: p.recorded, width: 2, spanGaps: false, points: { show: xs.length <= 80 } },
      { label: ESTIMATE_LABEL, stroke: p.estimate, width: 1.5, dash: [6, 4], points: { show: false } },
    ];
    const data: uPlot.AlignedData = withWindow ? [xs, recorded, approx, window] : [xs, recorded, approx];
    if (withWindow) {
      series.push({ label: "context window", stroke: p.window, width: 1, dash: [2, 3], points: { show: false } });
    }
    const axis = { stroke: p.fg, grid: { stroke: p.grid, width: 1 }, ticks: { stroke: p.grid, width: 1 } };
    const opts: uPlot.Options = {
      width: Math.max(200, frame.clientWidth),
      height: HEIGHT,
      scales: {
        x: { time: false, range: [0.5, xs.length + 0.5] },
        y: { range: (_u, _min, max) => [0, Math.max(10, max * 1.08)] },
      },
      axes: [
        { ...axis, label: "step", values: (_u, vals) => vals.map((v) => (Number.isInteger(v) ? String(v) : "")) },
        { ...axis, label: "tokens", size: 56, values: (_u, vals) => vals.map((v) => short(v)) },
      ],
      series,
      legend: { show: false },
      cursor: { drag: { x: false, y: false }, points: { size: 7 } },
      hooks: {
        setCursor: [(u) => this.hover(u.cursor.idx ?? null, u.cursor.left ?? 0)],
        setSize: [() => this.placeDrops()],
      },
    };
    this.plot = new uPlot(opts, data, frame);
    this.plot.over.addEventListener("click", () => {
      const idx = this.plot?.cursor.idx;
      if (idx !== null && idx !== undefined) {
        this.selected = idx;
        this.choose.step(idx);
      }
    });
    this.plot.over.addEventListener("mouseleave", () => (this.tip.hidden = true));
    for (const rep of t.replacements) {
      if (rep.kind !== "compaction") {
        continue;
      }
      const node = el("button", "drop", `▼ ${count(rep.shadowed.count)}`);
      node.dataset.seq = String(rep.seq);
      node.dataset.shadowed = String(rep.shadowed.count);
      const text = `Compaction at #${rep.seq}: ${dividerText(rep)}; surface ${events(rep.before.events)} → ${events(rep.after.events)}. Enter shows what it replaced.`;
      node.setAttribute("aria-label", text);
      node.title = text;
      node.addEventListener("click", (e) => {
        e.stopPropagation();
        this.choose.drop(rep);
      });
      this.plot.over.append(node);
      this.drops.push({ rep, x: dropX(t.steps, rep), node });
    }
    this.placeDrops();
  }

  private placeDrops(): void {
    const u = this.plot;
    if (!u) {
      return;
    }
    let labelled = -Infinity;
    for (const d of this.drops) {
      const left = u.valToPos(d.x, "x");
      d.node.style.left = `${left}px`;
      // Labels too close to the previous one would overlap: the marker stays, with its name.
      const room = left - labelled > 48;
      d.node.classList.toggle("crowded", !room);
      if (room) {
        labelled = left;
      }
    }
  }

  private hover(idx: number | null, left: number): void {
    if (idx === null || idx < 0 || idx >= this.timeline.steps.length) {
      this.tip.hidden = true;
      return;
    }
    this.tip.replaceChildren(...stepLines(this.timeline.steps[idx], idx).map((line) => el("div", undefined, line)));
    this.tip.hidden = false;
    const width = this.root.clientWidth;
    const x = left + 70;
    this.tip.style.left = `${Math.min(Math.max(0, x), Math.max(0, width - 320))}px`;
  }

  private select(index: number): void {
    const u = this.plot;
    const steps = this.timeline.steps;
    if (!u || !steps.length) {
      return;
    }
    this.selected = Math.max(0, Math.min(steps.length - 1, index));
    const y = steps[this.selected].surface.approxTokens;
    u.setCursor({ left: u.valToPos(this.selected + 1, "x"), top: u.valToPos(y, "y") });
    this.live.textContent = stepLines(steps[this.selected], this.selected).join(". ");
  }

  private key(e: KeyboardEvent): void {
    const n = this.timeline.steps.length;
    if (e.key === "ArrowRight" || e.key === "ArrowLeft" || e.key === "Home" || e.key === "End") {
      e.preventDefault();
      const next =
        e.key === "Home" ? 0 : e.key === "End" ? n - 1 : this.selected + (e.key === "ArrowRight" ? 1 : -1);
      this.select(next);
    } else if (e.key === "Enter" && this.selected >= 0) {
      e.preventDefault();
      this.choose.step(this.selected);
    }
  }
}
