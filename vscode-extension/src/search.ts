// Search Sessions… and Search in Session… (editor.md): a QuickPick that searches as you type and
// pages with "Load more". A hit shows its session's title (else its first message), never its id, and the
// match in its snippet is highlighted: VS Code marks the typed phrase where the snippet holds it
// (matchOnDetail), while the server's ranking is kept (sortByLabel off).

import * as vscode from "vscode";
import { formatError, isCancellation } from "./errors";
import {
  Methods,
  type Rpc,
  type SessionEventSearchHit,
  type SessionEventSearchRequest,
  type SessionHeader,
  type SessionSearchPage,
  type SessionSearchRequest,
  type SessionTitleObservationResult,
} from "./protocol";
import { FIRST_MESSAGE_WINDOW, firstUserText, hitDescription, hitTitle, sessionHitDescription } from "./refs";

/** What picking a hit does (commands.ts: open its event window and follow it in the trees). */
export interface HitActions {
  open(hit: SessionEventSearchHit): void;
  openView(hit: SessionEventSearchHit): void;
  error(prefix: string, err: unknown): void;
  /** A page that names unreadable sessions (the search left them out). */
  unreadable?(page: SessionSearchPage): void;
}

interface HitItem extends vscode.QuickPickItem {
  hit?: SessionEventSearchHit;
  more?: boolean;
}

const LOAD_MORE: HitItem = { label: "$(ellipsis) Load more…", alwaysShow: true, more: true };
const OPEN_VIEW: vscode.QuickInputButton = {
  iconPath: new vscode.ThemeIcon("graph-line"),
  tooltip: "Open in the Session View",
};

function hitItem(label: string, description: string, hit: SessionEventSearchHit): HitItem {
  return { label, description, detail: hit.snippet, alwaysShow: true, hit, buttons: [OPEN_VIEW] };
}

/** What to call these sessions: their titles (one readTitles request), else for each untitled
 *  one its first user message (one small readEvent window after its seed); absent when neither
 *  is known. */
async function names(rpc: Rpc, headers: SessionHeader[]): Promise<Map<string, string>> {
  const out = await titles(
    rpc,
    headers.map((h) => h.id),
  );
  const untitled = headers.filter((h) => !out.has(h.id));
  await Promise.all(
    untitled.map(async (h) => {
      const seed = typeof h.seedLength === "number" && h.seedLength > 0 ? h.seedLength : 0;
      try {
        const window = await rpc.request(Methods.readEvent, {
          sessionId: h.id,
          seq: seed,
          before: 0,
          after: FIRST_MESSAGE_WINDOW - 1,
        });
        const text = firstUserText(window.events);
        if (text !== undefined) {
          out.set(h.id, text);
        }
      } catch (err) {
        if (isCancellation(err)) {
          throw err;
        }
        // an empty or unreadable log: the hit shows as untitled
      }
    }),
  );
  return out;
}

/** Titles of these sessions, one readTitles request; a rejected or untitled one is absent. */
async function titles(rpc: Rpc, sessionIds: string[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  if (sessionIds.length === 0) {
    return out;
  }
  let results: SessionTitleObservationResult[];
  try {
    results = await rpc.request(Methods.readTitles, { sessionIds });
  } catch (err) {
    if (isCancellation(err)) {
      throw err;
    }
    return out; // the hits still show, as untitled
  }
  for (const r of results) {
    const title = r.value?.title?.title;
    if (typeof title === "string") {
      out.set(r.sessionId, title);
    }
  }
  return out;
}

/** `sortByLabel` is on the runtime QuickPick of the VS Code versions we run on, but not in
 *  @types/vscode 1.90; where it is missing, setting it does nothing. */
type SortableQuickPick<T extends vscode.QuickPickItem> = vscode.QuickPick<T> & { sortByLabel?: boolean };

async function searchPick(
  actions: HitActions,
  opts: {
    title: string;
    placeholder: string;
    fetch: (query: string, cursor?: string) => Promise<{ items: HitItem[]; nextCursor?: string }>;
  },
): Promise<void> {
  const qp: SortableQuickPick<HitItem> = vscode.window.createQuickPick<HitItem>();
  qp.title = opts.title;
  qp.placeholder = opts.placeholder;
  qp.matchOnDescription = false;
  qp.matchOnDetail = true; // highlights the typed phrase in each snippet
  qp.sortByLabel = false; // the server's ranking, not VS Code's label matching
  qp.ignoreFocusOut = false;
  let serial = 0;
  let query = "";
  let cursor: string | undefined;
  let hits: HitItem[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;

  const render = (): void => {
    qp.items = cursor ? [...hits, LOAD_MORE] : hits;
  };
  const run = async (value: string, more: boolean): Promise<void> => {
    const text = value.trim();
    const mine = ++serial;
    if (text === "") {
      hits = [];
      cursor = undefined;
      qp.busy = false;
      render();
      return;
    }
    qp.busy = true;
    try {
      const page = await opts.fetch(text, more ? cursor : undefined);
      if (mine !== serial) {
        return;
      }
      const firstNew = more ? hits.length : 0;
      query = text;
      hits = more ? [...hits, ...page.items] : page.items;
      cursor = page.nextCursor;
      render();
      if (hits.length === 0) {
        qp.items = [{ label: `No match for "${text}"`, alwaysShow: true }];
      } else {
        qp.activeItems = [hits[Math.min(firstNew, hits.length - 1)]];
      }
    } catch (err) {
      if (mine === serial) {
        qp.items = [{ label: `$(error) ${formatError(err)}`, alwaysShow: true }];
        if (!isCancellation(err)) {
          actions.error("Search failed", err);
        }
      }
    } finally {
      if (mine === serial) {
        qp.busy = false;
      }
    }
  };

  qp.onDidChangeValue((value) => {
    if (timer) {
      clearTimeout(timer);
    }
    timer = setTimeout(() => void run(value, false), 250);
  });
  qp.onDidAccept(() => {
    const item = qp.selectedItems[0] ?? qp.activeItems[0];
    if (item?.more) {
      void run(query, true);
      return;
    }
    if (item?.hit) {
      qp.hide();
      actions.open(item.hit);
      return;
    }
    if (qp.value.trim() !== query) {
      if (timer) {
        clearTimeout(timer);
      }
      void run(qp.value, false);
    }
  });
  qp.onDidTriggerItemButton((e) => {
    const hit = e.item.hit;
    if (hit) {
      qp.hide();
      actions.openView(hit);
    }
  });
  qp.onDidHide(() => {
    if (timer) {
      clearTimeout(timer);
    }
    qp.dispose();
  });
  qp.show();
}

export async function searchSessions(rpc: Rpc, limit: number, actions: HitActions): Promise<void> {
  await searchPick(actions, {
    title: "Search Sessions",
    placeholder: "Type a phrase to search every session (phrase match, case and accents folded)",
    fetch: async (query, cursor) => {
      const params: SessionSearchRequest = { query, limit };
      if (cursor) {
        params.cursor = cursor;
      }
      const page = await rpc.request(Methods.searchSessions, params);
      actions.unreadable?.(page);
      const named = await names(
        rpc,
        page.items.map((h) => h.header),
      );
      return {
        items: page.items.map((h) =>
          hitItem(`$(comment-discussion) ${hitTitle(h.header, named.get(h.header.id))}`, sessionHitDescription(h), h.bestMatch),
        ),
        nextCursor: page.nextCursor,
      };
    },
  });
}

export async function searchInSession(rpc: Rpc, sessionId: string, limit: number, actions: HitActions): Promise<void> {
  const named = await titles(rpc, [sessionId]);
  await searchPick(actions, {
    title: `Search in ${named.get(sessionId) ?? sessionId}`,
    placeholder: "Type a phrase to search this session",
    fetch: async (query, cursor) => {
      const params: SessionEventSearchRequest = { sessionId, query, limit };
      if (cursor) {
        params.cursor = cursor;
      }
      const page = await rpc.request(Methods.searchEvents, params);
      return {
        items: page.items.map((h) => hitItem(`$(symbol-event) #${h.seq} ${h.type}`, hitDescription(h), h)),
        nextCursor: page.nextCursor,
      };
    },
  });
}
