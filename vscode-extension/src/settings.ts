// `dshQuery.*` settings → how to start the server and its initializationOptions (protocol.md §1).
// Pure: the caller passes a reader over the workspace configuration.

export interface ConfigReader {
  get<T>(key: string): T | undefined;
}

export interface Settings {
  /** Interpreter command line (executable first); empty = use the fallback. */
  interpreter: string[];
  serverArgs: string[];
  /** Connect to the user's shared hub (hub.md §3) rather than spawn a private server. */
  hub: boolean;
  initializationOptions: Record<string, unknown>;
  readWindowMax: number;
  before: number;
  after: number;
  searchLimit: number;
}

/** Settings whose change needs a server restart. */
export const RESTART_KEYS = [
  "dshQuery.hub",
  "dshQuery.interpreter",
  "dshQuery.serverArgs",
  "dshQuery.persistence",
  "dshQuery.index",
  "dshQuery.readWindow.max",
];

export const DEFAULT_READ_WINDOW_MAX = 50;
export const MAX_SEARCH_LIMIT = 100;

function stringArray(value: unknown): string[] {
  if (typeof value === "string") {
    return value.trim() === "" ? [] : [value];
  }
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string" && v !== "") : [];
}

function int(value: unknown, fallback: number, min: number, max: number): number {
  const n = typeof value === "number" && Number.isFinite(value) ? Math.trunc(value) : fallback;
  return Math.max(min, Math.min(max, n));
}

export function readSettings(cfg: ConfigReader): Settings {
  const readWindowMax = int(cfg.get("readWindow.max"), DEFAULT_READ_WINDOW_MAX, 0, 1_000_000);
  const init: Record<string, unknown> = { readWindowMax };
  const persistence = cfg.get<unknown>("persistence");
  if (persistence === null || (typeof persistence === "string" && persistence.trim().toLowerCase() === "none")) {
    init.persistence = null;
  } else if (typeof persistence === "string" && persistence.trim() !== "") {
    init.persistence = persistence.trim();
  } else if (Array.isArray(persistence) && persistence.length > 0) {
    // importers.md §4.3: several URIs mounted as one; the server validates each.
    init.persistence = persistence.map((uri) => (typeof uri === "string" ? uri.trim() : uri));
  }
  const index = cfg.get<unknown>("index");
  if (typeof index === "string" && index.trim() !== "") {
    init.index = index.trim();
  }
  return {
    interpreter: stringArray(cfg.get("interpreter")),
    serverArgs: stringArray(cfg.get("serverArgs")),
    hub: cfg.get<unknown>("hub") !== false,
    initializationOptions: init,
    readWindowMax,
    before: int(cfg.get("readWindow.before"), 3, 0, readWindowMax),
    after: int(cfg.get("readWindow.after"), 3, 0, readWindowMax),
    searchLimit: int(cfg.get("search.limit"), 20, 1, MAX_SEARCH_LIMIT),
  };
}

export interface Launch {
  command: string;
  args: string[];
}

/** `<interpreter…> -m dsh_query_server <serverArgs…>`; `fallback` when no interpreter is set. */
export function serverLaunch(settings: Settings, fallback: string[]): Launch {
  const interpreter = settings.interpreter.length > 0 ? settings.interpreter : fallback.length > 0 ? fallback : ["python3"];
  return { command: interpreter[0], args: [...interpreter.slice(1), "-m", "dsh_query_server", ...settings.serverArgs] };
}

/** `serve` flags that make a private server of their own: they never go to a hub. */
const PRIVATE_ARGS = ["--demo", "--tcp", "--tcp-token-file"];

/** Whether to connect to the hub: the setting, a platform with Unix sockets, and no flag that
 * only a private server understands. */
export function usesHub(settings: Settings, platform: string = process.platform): boolean {
  return settings.hub && platform !== "win32" && !settings.serverArgs.some((a) => PRIVATE_ARGS.includes(a.split("=")[0]));
}

/** The environment variable that hands a hub its configuration (hub.md §3, [ours]). */
export const HUB_OPTIONS_ENV = "DSH_QUERY_HUB_OPTIONS";

/** `<interpreter…> -m dsh_query_server.cli hub ensure <serverArgs…>`: finds or starts the hub of
 * this configuration (the options travel in HUB_OPTIONS_ENV) and prints its status as JSON. */
export function hubLaunch(settings: Settings, fallback: string[]): Launch {
  const serve = serverLaunch(settings, fallback);
  const interpreterArgs = serve.args.slice(0, serve.args.indexOf("-m"));
  return { command: serve.command, args: [...interpreterArgs, "-m", "dsh_query_server.cli", "hub", "ensure", ...settings.serverArgs] };
}

/** The reconnection delays after a hub connection drops, in ms; then the extension gives up. */
export const RECONNECT_DELAYS_MS = [250, 500, 1000, 2000, 4000, 8000, 15000, 30000];

/** True when a settings change (by `affects(key)`) needs a restart. */
export function needsRestart(affects: (key: string) => boolean): boolean {
  return RESTART_KEYS.some((key) => affects(key));
}
