// The session page (docs/views.md §3): the context chart over the transcript. The chart comes from
// readTimeline alone; the transcript is windowed: listEvents gives every event's type and class,
// readEvent windows bring the payloads of the rows on screen, readSurface brings a surface (now,
// or at a point). The same page runs in the VS Code webview and in the HTML export (view/host.ts).

import type {
  SessionEvent,
  SessionEventRecord,
  SessionEventWindow,
  SessionLineageNode,
  SessionLineageTrace,
  SessionSurfaceSnapshot,
  SessionTimeline,
  SessionUsage,
  TimelineReplacement,
} from "../protocol.gen";
import { ContextChart } from "./chart";
import type { Host } from "./host";
import { VirtualList } from "./list";
import { count, dividerText, events, kindLabel, logRows, shadowedSpan, surfaceRows, type Row } from "./model";
import { classBadge, el, labelOf, messageBody, minorText, timeText } from "./render";
import { usageLine } from "./usage/format";

type Mode = { kind: "log" } | { kind: "now" } | { kind: "point"; through: number; title: string };

const ESTIMATES: Record<Row["kind"], number> = { event: 96, minor: 30, divider: 40 };

function rowKey(row: Row): string {
  switch (row.kind) {
    case "event":
      return `${row.compact ? "c" : "e"}${row.seq}`;
    case "minor":
      return row.key;
    case "divider":
      return `d${row.rep.seq}`;
  }
}

function button(text: string, onClick: () => void, label?: string): HTMLButtonElement {
  const b = el("button", "act", text);
  b.type = "button";
  if (label) {
    b.setAttribute("aria-label", label);
  }
  b.addEventListener("click", (e) => {
    e.stopPropagation();
    onClick();
  });
  return b;
}

export class SessionPage {
  private timeline!: SessionTimeline;
  private records: SessionEventRecord[] = [];
  private readonly cache = new Map<number, SessionEvent>();
  private readonly requested = new Set<number>();
  private wanted = new Set<number>();
  private flushing = false;
  private mode: Mode = { kind: "log" };
  private surface: number[] = [];
  private readonly opened = new Set<string>();
  private readonly expanded = new Set<number>();
  private readonly shadowed = new Map<number, number[]>();
  private readonly stepOf = new Map<number, number>();
  private readonly list: VirtualList<Row>;
  private readonly chartSlot = el("div", "chart-slot");
  private readonly toolbar = el("div", "toolbar");
  private readonly banner = el("div", "banner");
  private readonly header = el("header", "session-head");
  private readonly status = el("div", "status");
  private readonly toggle: HTMLButtonElement;
  private firstScreen = false;
  private loaded = false;

  constructor(
    private readonly host: Host,
    private readonly root: HTMLElement,
  ) {
    this.list = new VirtualList<Row>(
      {
        estimate: (row) => (row.kind === "event" && row.compact ? 26 : ESTIMATES[row.kind]),
        key: rowKey,
        render: (row) => this.renderRow(row),
        activate: (row) => this.activate(row),
      },
      "Transcript",
    );
    this.toggle = button("Only what the model sees now", () => void this.setMode(this.mode.kind === "now" ? { kind: "log" } : { kind: "now" }));
    this.toggle.id = "only-now";
    this.toggle.setAttribute("aria-pressed", "false");
    this.banner.hidden = true;
    this.status.setAttribute("role", "status");
    root.append(this.header, this.chartSlot, this.toolbar, this.banner, this.status, this.list.root);
    host.onReveal((seq) => void this.reveal(seq));
    host.onRefresh(() => void this.load());
  }

  get sessionId(): string {
    return this.host.config.sessionId;
  }

  /** Reads the session: readTimeline, listEvents and the first window of payloads asked for at
   * once; the chart is drawn as soon as the timeline is there, the transcript once the list is.
   * Marks: dsh-timeline, dsh-chart, dsh-records, dsh-first-screen. */
  async load(): Promise<void> {
    const sessionId = this.sessionId;
    try {
      const max = Math.max(0, this.host.config.windowMax);
      const first = this.loaded ? 0 : (this.host.config.reveal ?? 0);
      const window = this.host
        .request<SessionEventWindow>("sessionQuery/readEvent", { sessionId, seq: first, before: max, after: max })
        .catch(() => undefined); // a session without that event: rows ask again as they show
      // Both at once: the server answers them in parallel, and the chart does not wait for the list.
      const listed = this.host.request<SessionEventRecord[]>("sessionQuery/listEvents", { sessionId });
      listed.catch(() => undefined); // awaited below; a failure is reported there
      const timeline = await this.host.request<SessionTimeline>("sessionQuery/readTimeline", { sessionId });
      performance.mark("dsh-timeline");
      this.timeline = timeline;
      // A stored log may change under the same seqs (an importer's end-of-file placeholder gives
      // way to the real event): nothing read before this observation is kept.
      this.cache.clear();
      this.requested.clear();
      this.shadowed.clear();
      this.expanded.clear();
      this.stepOf.clear();
      timeline.steps.forEach((s, i) => this.stepOf.set(s.seq, i));
      this.records = [];
      this.drawHeader();
      this.drawChart(timeline);
      performance.mark("dsh-chart");
      const records = await listed;
      performance.mark("dsh-records");
      this.records = records;
      for (const e of (await window)?.events ?? []) {
        this.cache.set(e.seq, e);
      }
      this.drawToolbar();
      await this.setMode(this.mode);
      if (this.host.config.reveal !== undefined && !this.loaded) {
        await this.reveal(this.host.config.reveal);
      }
      this.loaded = true; // a refresh keeps the place the reader is at
      void this.usage();
      void this.subagents();
    } catch (err) {
      this.fail(err);
    }
  }

  private drawChart(timeline: SessionTimeline): void {
    this.chartSlot.replaceChildren(
      new ContextChart(timeline, {
        step: (i) => {
          const step = timeline.steps[i];
          void this.setMode({
            kind: "point",
            through: step.seq - 1,
            title: `What the model saw when it wrote #${step.seq} (step ${i + 1})`,
          });
        },
        drop: (rep) =>
          void this.setMode({
            kind: "point",
            through: rep.seq - 1,
            title: `The surface just before #${rep.seq} replaced ${events(rep.shadowed.count)}`,
          }),
      }).root,
    );
  }

  private fail(err: unknown): void {
    const message = err instanceof Error ? err.message : String(err);
    const code = (err as { code?: unknown }).code;
    this.status.textContent = `Could not read the session: ${typeof code === "string" ? `${code}: ` : ""}${message}`;
    this.status.classList.add("error");
  }

  private drawHeader(): void {
    const h = this.timeline.session;
    const source = h.source as { agent?: unknown } | undefined;
    const agent = typeof source?.agent === "string" ? source.agent : "dsh";
    const title = el("h1", undefined, h.id);
    const meta = el("div", "meta");
    const parts = [agent, `created ${timeText(h.createdAt)}`];
    if (h.cwd) {
      parts.push(h.cwd);
    }
    const length = this.timeline.capturedThroughSeq === null ? 0 : this.timeline.capturedThroughSeq + 1;
    parts.push(`${count(length)} events`, `${count(this.timeline.steps.length)} model responses`);
    const compactions = this.timeline.replacements.filter((r) => r.kind === "compaction").length;
    parts.push(`${count(compactions)} ${compactions === 1 ? "compaction" : "compactions"}`);
    meta.textContent = parts.join(" · ");
    this.header.replaceChildren(title, meta);
    if (h.parentSession !== undefined) {
      const parent = el("div", "meta");
      parent.append(`sub-agent of `, this.sessionLink(h.parentSession));
      this.header.append(parent);
    }
  }

  private sessionLink(id: string): HTMLElement {
    if (!this.host.can("openSession")) {
      return el("code", undefined, id);
    }
    return button(id, () => this.host.act({ action: "openSession", sessionId: id }), `Open the session view of ${id}`);
  }

  /** The session's tokens and cost (docs/usage.md §1) as one line of the header; a host that
   * cannot read usage (the HTML export) leaves it out. */
  private async usage(): Promise<void> {
    let usage: SessionUsage;
    try {
      usage = await this.host.request<SessionUsage>("sessionQuery/readUsage", { sessionId: this.sessionId });
    } catch {
      return;
    }
    const line = el("div", "meta usage");
    line.dataset.responses = String(usage.total.responses);
    line.textContent = usageLine(usage.total, usage.prices);
    this.header.querySelector(".usage")?.remove();
    this.header.append(line);
  }

  private async subagents(): Promise<void> {
    let trace: SessionLineageTrace;
    try {
      trace = await this.host.request<SessionLineageTrace>("sessionQuery/traceSession", { sessionId: this.sessionId });
    } catch {
      return; // no lineage (a static export without it, or the corpus failed): nothing to link
    }
    const children: SessionLineageNode[] = trace.descendants;
    if (!children.length) {
      return;
    }
    const row = el("div", "meta subagents");
    row.append(`${children.length === 1 ? "Sub-agent" : "Sub-agents"}: `);
    for (const child of children) {
      const h = child.session.header;
      const preset = typeof h.agentPreset === "string" ? ` (${h.agentPreset})` : "";
      const item = el("span", "subagent");
      item.append(this.sessionLink(h.id), `${preset}, started ${timeText(h.createdAt)} `);
      row.append(item);
    }
    this.header.append(row);
  }

  private drawToolbar(): void {
    const traceButton = this.host.can("traceSession")
      ? [button("Trace session", () => this.host.act({ action: "traceSession", sessionId: this.sessionId }))]
      : [];
    const legend = el("span", "legend-words");
    legend.append(classBadge("current"), classBadge("shadowed"), classBadge("log-only"));
    this.toolbar.replaceChildren(this.toggle, ...traceButton, legend);
  }

  // ---- modes ------------------------------------------------------------------------------------

  async setMode(mode: Mode): Promise<void> {
    this.mode = mode;
    this.toggle.setAttribute("aria-pressed", String(mode.kind === "now"));
    this.toggle.classList.toggle("on", mode.kind === "now");
    if (mode.kind === "log") {
      this.banner.hidden = true;
      this.list.setRows(logRows(this.records, this.timeline.replacements, this.opened), undefined);
      document.body.dataset.mode = mode.kind;
      this.markFirstScreen();
      return;
    }
    const params: Record<string, unknown> = { sessionId: this.sessionId };
    if (mode.kind === "point") {
      params.throughSeq = mode.through;
    }
    if (mode.kind === "point" && mode.through < 0) {
      this.surface = [];
    } else {
      const snapshot = await this.host.request<SessionSurfaceSnapshot>("sessionQuery/readSurface", params);
      for (const e of snapshot.events) {
        this.cache.set(e.seq, e);
      }
      this.surface = snapshot.events.map((e) => e.seq);
    }
    if (this.mode !== mode) {
      return; // another mode was chosen while this surface was read
    }
    this.drawBanner(mode);
    this.list.setRows(this.surfaceRows(), undefined);
    this.list.scrollTo(0);
    document.body.dataset.mode = mode.kind; // the rows are the mode's (tests wait for this)
  }

  private reps(): TimelineReplacement[] {
    const m = this.mode;
    const all = this.timeline.replacements;
    return m.kind === "point" ? all.filter((r) => r.seq <= m.through) : all;
  }

  private surfaceRows(): Row[] {
    return surfaceRows(this.surface, this.reps(), this.expanded, this.shadowed);
  }

  private drawBanner(mode: Mode): void {
    this.banner.hidden = false;
    const back = button("Back to the whole log", () => void this.setMode({ kind: "log" }));
    if (mode.kind === "now") {
      this.banner.replaceChildren(
        el("strong", undefined, "What the model sees now: "),
        `${events(this.surface.length)} on the current surface, in the order the model gets them. `,
        back,
      );
    } else if (mode.kind === "point") {
      const step = this.timeline.steps.find((s) => s.seq === mode.through + 1);
      const size = step ? `, ≈${count(step.surface.approxTokens)} tokens (estimate)` : "";
      this.banner.replaceChildren(
        el("strong", undefined, `${mode.title}: `),
        `${events(this.surface.length)}${size}, through #${mode.through}. `,
        back,
      );
    }
  }

  private async toggleDivider(rep: TimelineReplacement): Promise<void> {
    if (this.mode.kind === "log") {
      const first = this.list.indexOf((r) => r.kind === "event" && r.seq === rep.shadowed.firstSeq);
      this.list.scrollTo(first, true);
      return;
    }
    if (this.expanded.has(rep.seq)) {
      this.expanded.delete(rep.seq);
    } else {
      if (!this.shadowed.has(rep.seq)) {
        const before = await this.host.request<SessionSurfaceSnapshot>("sessionQuery/readSurface", {
          sessionId: this.sessionId,
          throughSeq: rep.seq - 1,
        });
        for (const e of before.events) {
          this.cache.set(e.seq, e);
        }
        this.shadowed.set(
          rep.seq,
          shadowedSpan(
            before.events.map((e) => e.seq),
            rep,
          ),
        );
      }
      this.expanded.add(rep.seq);
    }
    this.list.setRows(this.surfaceRows(), `d${rep.seq}`);
  }

  async reveal(seq: number): Promise<void> {
    if (this.mode.kind !== "log") {
      await this.setMode({ kind: "log" });
    }
    let index = this.list.indexOf((r) => r.kind === "event" && r.seq === seq);
    if (index < 0) {
      const rows = logRows(this.records, this.timeline.replacements, this.opened);
      const run = rows.find((r) => r.kind === "minor" && r.seqs.includes(seq));
      if (run?.kind === "minor") {
        this.opened.add(run.key);
        this.list.setRows(logRows(this.records, this.timeline.replacements, this.opened), undefined);
        index = this.list.indexOf((r) => r.kind === "event" && r.seq === seq);
      }
    }
    this.list.scrollTo(index, true);
  }

  // ---- rows ---------------------------------------------------------------------------------------

  private activate(row: Row): void {
    if (row.kind === "minor") {
      this.opened.add(row.key);
      this.list.setRows(logRows(this.records, this.timeline.replacements, this.opened), `c${row.seqs[0]}`);
    } else if (row.kind === "divider") {
      void this.toggleDivider(row.rep);
    } else {
      void this.setMode({ kind: "point", through: row.seq, title: `The surface through #${row.seq}` });
    }
  }

  private renderRow(row: Row): HTMLElement {
    if (row.kind === "minor") {
      return this.renderMinor(row.seqs);
    }
    if (row.kind === "divider") {
      return this.renderDivider(row.rep, row.expandable, row.expanded, row.depth);
    }
    const node = row.compact ? this.renderCompact(row.seq) : this.renderEvent(row.seq);
    node.style.marginLeft = `${row.depth * 18}px`;
    return node;
  }

  private want(seq: number): void {
    if (this.cache.has(seq) || this.requested.has(seq)) {
      return;
    }
    this.wanted.add(seq);
    if (!this.flushing) {
      this.flushing = true;
      queueMicrotask(() => this.fetchWanted());
    }
  }

  /** readEvent windows covering every wanted seq: at most ``windowMax`` before and after. */
  private fetchWanted(): void {
    this.flushing = false;
    const seqs = [...this.wanted].sort((a, b) => a - b);
    this.wanted = new Set();
    const max = Math.max(0, this.host.config.windowMax);
    const last = this.records.length - 1;
    let i = 0;
    while (i < seqs.length) {
      const center = Math.min(seqs[i] + max, last);
      const start = Math.max(0, center - max);
      const end = Math.min(last, center + max);
      for (let s = start; s <= end; s++) {
        this.requested.add(s);
      }
      this.host
        .request<SessionEventWindow>("sessionQuery/readEvent", { sessionId: this.sessionId, seq: center, before: max, after: max })
        .then((w) => {
          for (const e of w.events) {
            this.cache.set(e.seq, e);
          }
          this.list.redraw((r) => r.kind === "event" && r.seq >= start && r.seq <= end);
          this.markFirstScreen();
        })
        .catch((err: unknown) => {
          for (let s = start; s <= end; s++) {
            this.requested.delete(s);
          }
          this.fail(err);
        });
      while (i < seqs.length && seqs[i] <= end) {
        i++;
      }
    }
  }

  /** The first screen is painted once every row in view has its content (performance mark
   * ``dsh-first-screen``, read by the E2E harness). */
  private markFirstScreen(): void {
    if (this.firstScreen) {
      return;
    }
    const missing = this.list.visibleRows().some((r) => r.kind === "event" && !this.cache.has(r.seq));
    if (!missing) {
      this.firstScreen = true;
      performance.mark("dsh-first-screen");
      document.body.dataset.firstScreen = String(Math.round(performance.now()));
    }
  }

  private surfaceOf(seq: number): SessionEventRecord["surface"] | undefined {
    return this.records[seq]?.surface;
  }

  private renderEvent(seq: number): HTMLElement {
    const record = this.records[seq];
    const type = record?.type ?? this.cache.get(seq)?.type ?? "?";
    const event = this.cache.get(seq);
    const label = labelOf(event, type);
    const surface = this.surfaceOf(seq);
    const node = el("article", `msg role-${label.role} surface-${surface ?? "unknown"}`);
    node.dataset.seq = String(seq);
    node.dataset.surface = surface ?? "";
    const head = el("div", "msg-head");
    const step = this.stepOf.get(seq);
    head.append(el("strong", "who", label.who), el("span", "seq", `#${seq}`));
    if (step !== undefined) {
      head.append(el("span", "step", `step ${step + 1}`));
    }
    if (record) {
      head.append(el("span", "time", timeText(record.time)));
    }
    head.append(classBadge(surface));
    const actions = el("span", "actions");
    if (type === "assistant/message") {
      actions.append(
        button("What the model saw", () =>
          void this.setMode({ kind: "point", through: seq - 1, title: `What the model saw when it wrote #${seq}` }),
        ),
      );
    }
    actions.append(
      button("Surface here", () => void this.setMode({ kind: "point", through: seq, title: `The surface through #${seq}` }), `The surface through #${seq}`),
    );
    if (this.host.can("traceEvent")) {
      actions.append(button("Trace", () => this.host.act({ action: "traceEvent", sessionId: this.sessionId, seq }), `Trace event #${seq}`));
    }
    head.append(actions);
    node.append(head);
    if (event) {
      node.append(messageBody(event));
    } else {
      node.append(el("div", "note loading", "loading…"));
      this.want(seq);
    }
    node.addEventListener("click", (e) => this.linkClick(e));
    return node;
  }

  private linkClick(e: MouseEvent): void {
    const a = (e.target as HTMLElement).closest("a");
    if (!a) {
      return;
    }
    const href = a.getAttribute("href") ?? "";
    if (this.host.can("openLink")) {
      e.preventDefault();
      if (/^https?:\/\//i.test(href)) {
        this.host.act({ action: "openLink", href });
      }
    } else if (!/^https?:\/\//i.test(href)) {
      e.preventDefault();
    } else {
      a.target = "_blank";
      a.rel = "noopener noreferrer";
    }
  }

  private renderCompact(seq: number): HTMLElement {
    const record = this.records[seq];
    const event = this.cache.get(seq);
    const node = el("div", `line surface-${record?.surface ?? "unknown"}`);
    node.dataset.seq = String(seq);
    node.dataset.surface = record?.surface ?? "";
    node.append(el("span", "seq", `#${seq}`), el("span", "text", minorText(event, record?.type ?? "?")), classBadge(record?.surface));
    if (!event) {
      this.want(seq);
    }
    return node;
  }

  private renderMinor(seqs: number[]): HTMLElement {
    const tally = new Map<string, number>();
    for (const s of seqs) {
      const t = this.records[s]?.type ?? "?";
      tally.set(t, (tally.get(t) ?? 0) + 1);
    }
    const kinds = [...tally].map(([t, n]) => (n > 1 ? `${t} ×${count(n)}` : t)).join(", ");
    const span = seqs.length > 1 ? `#${seqs[0]}–#${seqs[seqs.length - 1]}` : `#${seqs[0]}`;
    const node = el("div", "minor surface-log-only");
    node.append(
      el("span", "twisty", "▸"),
      el("span", "text", `${events(seqs.length)} (${span}): ${kinds}`),
      classBadge("log-only"),
    );
    node.title = "Enter or click to show them one per line";
    node.addEventListener("click", () => this.activate({ kind: "minor", key: `m${seqs[0]}`, seqs, depth: 0 }));
    return node;
  }

  private renderDivider(rep: TimelineReplacement, expandable: boolean, expanded: boolean, depth: number): HTMLElement {
    const node = el("div", `divider kind-${rep.kind}`);
    node.dataset.seq = String(rep.seq);
    node.dataset.shadowed = String(rep.shadowed.count);
    node.style.marginLeft = `${depth * 18}px`;
    const text = `${kindLabel(rep)}: ${dividerText(rep)}`;
    node.append(el("span", "rule"), el("span", "divider-text", text));
    const sizes = `surface ${events(rep.before.events)} → ${events(rep.after.events)}, ≈${count(rep.before.approxTokens)} → ≈${count(rep.after.approxTokens)} tokens (estimate)`;
    node.append(el("span", "divider-size", sizes));
    const label = expandable
      ? expanded
        ? "Hide what it replaced"
        : "Show what it replaced"
      : `Go to #${rep.shadowed.firstSeq}`;
    const b = button(label, () => void this.toggleDivider(rep));
    b.setAttribute("aria-expanded", String(expanded));
    node.append(b, el("span", "rule"));
    return node;
  }
}
