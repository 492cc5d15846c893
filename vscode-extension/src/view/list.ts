// A windowed list (virtual scrolling) of rows of different heights: only the rows near the
// viewport are in the DOM. Heights start as estimates and are replaced by measured ones as rows
// are shown; the row at the top of the viewport keeps its place while heights above it change.
// Keyboard: arrows move between rows (roving tabindex), Home/End, Enter activates.

export interface ListSource<T> {
  estimate(row: T): number;
  render(row: T, index: number): HTMLElement;
  key(row: T): string;
  activate(row: T, index: number, element: HTMLElement): void;
}

const OVERSCAN_PX = 600;

export class VirtualList<T> {
  readonly root: HTMLElement;
  private readonly spacer: HTMLElement;
  private rows: T[] = [];
  private heights = new Float64Array(0);
  private offsets = new Float64Array(1);
  private readonly measured = new Map<string, number>();
  private readonly shown = new Map<number, HTMLElement>();
  private focused = 0;
  private frame = 0;

  constructor(
    private readonly source: ListSource<T>,
    label: string,
  ) {
    this.root = document.createElement("div");
    this.root.className = "vlist";
    this.root.setAttribute("role", "list");
    this.root.setAttribute("aria-label", label);
    this.spacer = document.createElement("div");
    this.spacer.className = "vlist-spacer";
    this.root.append(this.spacer);
    this.root.addEventListener("scroll", () => this.schedule());
    this.root.addEventListener("keydown", (e) => this.key(e));
    new ResizeObserver(() => this.schedule()).observe(this.root);
  }

  get length(): number {
    return this.rows.length;
  }

  setRows(rows: T[], keepKey?: string): void {
    const anchor = keepKey ?? this.anchorKey();
    this.rows = rows;
    this.heights = new Float64Array(rows.length);
    for (let i = 0; i < rows.length; i++) {
      this.heights[i] = this.measured.get(this.source.key(rows[i])) ?? this.source.estimate(rows[i]);
    }
    this.offsets = new Float64Array(rows.length + 1);
    this.recompute(0);
    for (const node of this.shown.values()) {
      node.remove();
    }
    this.shown.clear();
    this.focused = Math.min(this.focused, Math.max(0, rows.length - 1));
    const at = anchor === undefined ? -1 : rows.findIndex((r) => this.source.key(r) === anchor);
    if (at >= 0) {
      this.focused = at;
      this.root.scrollTop = this.offsets[at];
    } else if (keepKey === undefined) {
      this.root.scrollTop = Math.min(this.root.scrollTop, this.offsets[rows.length]);
    }
    this.draw();
  }

  /** The key of the row at the top of the viewport. */
  private anchorKey(): string | undefined {
    if (!this.rows.length) {
      return undefined;
    }
    return this.source.key(this.rows[this.indexAt(this.root.scrollTop)]);
  }

  /** Draws again the rows whose content changed (events that arrived). */
  redraw(which: (row: T) => boolean): void {
    for (const [i, node] of [...this.shown]) {
      if (which(this.rows[i])) {
        node.remove();
        this.shown.delete(i);
      }
    }
    this.draw();
  }

  visibleRows(): T[] {
    const first = this.indexAt(this.root.scrollTop);
    const last = this.indexAt(this.root.scrollTop + this.root.clientHeight);
    return this.rows.slice(first, last + 1);
  }

  scrollTo(index: number, focus = false): void {
    if (index < 0 || index >= this.rows.length) {
      return;
    }
    this.focused = index;
    this.root.scrollTop = this.offsets[index];
    this.draw();
    // measured heights above may have moved it: once more, then focus
    this.root.scrollTop = this.offsets[index];
    this.draw();
    if (focus) {
      this.shown.get(index)?.focus({ preventScroll: true });
    }
  }

  indexOf(match: (row: T) => boolean): number {
    return this.rows.findIndex(match);
  }

  private recompute(from: number): void {
    const { heights, offsets } = this;
    for (let i = from; i < heights.length; i++) {
      offsets[i + 1] = offsets[i] + heights[i];
    }
    this.spacer.style.height = `${offsets[heights.length]}px`;
  }

  /** The index of the row at pixel ``y`` (binary search on the offsets). */
  private indexAt(y: number): number {
    const n = this.rows.length;
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.offsets[mid] <= y) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    return Math.max(0, lo);
  }

  private schedule(): void {
    if (!this.frame) {
      this.frame = requestAnimationFrame(() => {
        this.frame = 0;
        this.draw();
      });
    }
  }

  private draw(): void {
    for (let pass = 0; pass < 3; pass++) {
      if (!this.drawOnce()) {
        return;
      }
    }
  }

  /** Shows the rows near the viewport; true when a measured height moved something. */
  private drawOnce(): boolean {
    const n = this.rows.length;
    if (!n) {
      return false;
    }
    const top = this.root.scrollTop;
    const first = this.indexAt(Math.max(0, top - OVERSCAN_PX));
    const last = this.indexAt(top + this.root.clientHeight + OVERSCAN_PX);
    for (const [i, node] of [...this.shown]) {
      if (i < first || i > last) {
        node.remove();
        this.shown.delete(i);
      }
    }
    for (let i = first; i <= last; i++) {
      if (!this.shown.has(i)) {
        const node = this.source.render(this.rows[i], i);
        node.classList.add("vrow");
        node.setAttribute("role", "listitem");
        node.setAttribute("aria-setsize", String(n));
        node.setAttribute("aria-posinset", String(i + 1));
        node.dataset.index = String(i);
        node.tabIndex = i === this.focused ? 0 : -1;
        node.style.top = `${this.offsets[i]}px`;
        this.spacer.append(node);
        this.shown.set(i, node);
      }
    }
    const anchor = this.indexAt(top);
    const anchorTop = this.offsets[anchor];
    let changedFrom = -1;
    for (const [i, node] of this.shown) {
      const h = node.offsetHeight;
      if (h > 0 && Math.abs(h - this.heights[i]) > 0.5) {
        this.heights[i] = h;
        this.measured.set(this.source.key(this.rows[i]), h);
        changedFrom = changedFrom < 0 ? i : Math.min(changedFrom, i);
      }
    }
    if (changedFrom < 0) {
      return false;
    }
    this.recompute(changedFrom);
    for (const [i, node] of this.shown) {
      node.style.top = `${this.offsets[i]}px`;
    }
    if (changedFrom < anchor) {
      this.root.scrollTop = top + (this.offsets[anchor] - anchorTop);
    }
    return true;
  }

  private key(e: KeyboardEvent): void {
    const target = e.target as HTMLElement;
    const row = target.closest<HTMLElement>(".vrow");
    if (!row || row !== target) {
      return; // keys inside a row's own controls stay theirs
    }
    const index = Number(row.dataset.index);
    let next: number;
    if (e.key === "ArrowDown") {
      next = index + 1;
    } else if (e.key === "ArrowUp") {
      next = index - 1;
    } else if (e.key === "Home") {
      next = 0;
    } else if (e.key === "End") {
      next = this.rows.length - 1;
    } else if (e.key === "PageDown") {
      next = this.indexAt(this.offsets[index] + this.root.clientHeight);
    } else if (e.key === "PageUp") {
      next = this.indexAt(Math.max(0, this.offsets[index] - this.root.clientHeight));
    } else if (e.key === "Enter" || e.key === " ") {
      e.preventDefault();
      this.source.activate(this.rows[index], index, row);
      return;
    } else {
      return;
    }
    e.preventDefault();
    next = Math.max(0, Math.min(this.rows.length - 1, next));
    const previous = this.shown.get(this.focused);
    if (previous) {
      previous.tabIndex = -1;
    }
    this.focused = next;
    const rowTop = this.offsets[next];
    const rowBottom = this.offsets[next + 1];
    if (rowTop < this.root.scrollTop || rowBottom > this.root.scrollTop + this.root.clientHeight) {
      this.root.scrollTop = e.key === "ArrowUp" || e.key === "PageUp" ? rowTop : Math.max(rowTop, rowBottom - this.root.clientHeight);
    }
    this.draw();
    const node = this.shown.get(next);
    if (node) {
      node.tabIndex = 0;
      node.focus({ preventScroll: true });
    }
  }
}
