// The server and its vscode-languageclient connection: by default the user's shared hub over its
// Unix socket (hub.md §3: found or started through `dsh-query hub ensure`, reconnected with
// back-off after a drop), else a private server process over stdio. Restart on server-setting
// changes, one Output channel, failures reported once with the reason.

import { spawn, type ChildProcess } from "node:child_process";
import * as os from "node:os";
import * as vscode from "vscode";
import {
  CloseAction,
  ErrorAction,
  LanguageClient,
  State,
  type CloseHandlerResult,
  type ErrorHandler,
  type ErrorHandlerResult,
  type LanguageClientOptions,
  type ServerOptions,
  type StreamInfo,
} from "vscode-languageclient/node";
import { StderrTail, formatError } from "./errors";
import { Methods, type DidChangeParams, type Method, type Params, type Result, type Rpc } from "./protocol";
import { connectSocket, ensureHub, type HubStatus } from "./hub";
import {
  RECONNECT_DELAYS_MS,
  hubLaunch,
  readSettings,
  serverLaunch,
  usesHub,
  type Launch,
  type Settings,
} from "./settings";

export type ServerState = "stopped" | "starting" | "running" | "failed";

export const CLIENT_ID = "dshQuery"; // vscode-languageclient reads `dshQuery.trace.server`
export const CLIENT_NAME = "Session Query";

/** Keeps the client's own notifications out of the way: the extension reports failures itself. */
class QuietLanguageClient extends LanguageClient {
  override error(message: string, data?: unknown, _showNotification?: boolean | "force"): void {
    super.error(message, data, false);
  }
}

/** What this module reads of the Python extension's API. Every member is optional: the API
 * belongs to another extension and may change, so each one is checked before use. */
interface PythonEnvironmentPath {
  path?: string;
}

interface PythonExtensionApi {
  environments?: {
    onDidChangeActiveEnvironmentPath?: (listener: () => void) => vscode.Disposable;
    getActiveEnvironmentPath?: (resource?: vscode.Uri) => PythonEnvironmentPath | undefined;
    resolveEnvironment?: (
      env: PythonEnvironmentPath,
    ) => Promise<{ executable?: { uri?: { fsPath?: string } } } | undefined>;
  };
  settings?: {
    getExecutionDetails?: (resource?: vscode.Uri) => { execCommand?: unknown } | undefined;
  };
}

/** The Python extension's active interpreter, if that extension is installed. */
async function pythonExtensionInterpreter(onChange: () => void): Promise<string[]> {
  const ext = vscode.extensions.getExtension("ms-python.python");
  if (!ext) {
    return [];
  }
  try {
    const api = (ext.isActive ? ext.exports : await ext.activate()) as PythonExtensionApi | undefined;
    const onEnvChange = api?.environments?.onDidChangeActiveEnvironmentPath;
    if (!pythonWatch && typeof onEnvChange === "function") {
      pythonWatch = onEnvChange.call(api?.environments, onChange);
    }
    const resource = vscode.workspace.workspaceFolders?.[0]?.uri;
    const active = api?.environments?.getActiveEnvironmentPath?.(resource);
    if (active?.path) {
      const resolved = await api?.environments?.resolveEnvironment?.(active);
      const exe: string | undefined = resolved?.executable?.uri?.fsPath ?? active.path;
      if (exe) {
        return [exe];
      }
    }
    const details = api?.settings?.getExecutionDetails?.(resource);
    const command = details?.execCommand;
    if (Array.isArray(command) && command.length > 0 && command.every((c) => typeof c === "string")) {
      return command;
    }
  } catch {
    // no usable Python extension API: fall back to python3
  }
  return [];
}

let pythonWatch: vscode.Disposable | undefined;

export class ServerManager implements vscode.Disposable {
  private client: QuietLanguageClient | undefined;
  private process: ChildProcess | undefined;
  private readonly stderr = new StderrTail();
  private stopping = false;
  private generation = 0;
  private restarts: number[] = [];
  private _state: ServerState = "stopped";
  /** This connection goes to the hub (else a private server process). */
  private hubMode = false;
  private reconnectTimer: NodeJS.Timeout | undefined;
  /** The hub could not be used: this window runs a private server until restarted. */
  private privateFallback = false;
  hub: HubStatus | undefined;
  private readonly stateEmitter = new vscode.EventEmitter<ServerState>();
  private readonly changeEmitter = new vscode.EventEmitter<DidChangeParams>();
  readonly onDidChangeState = this.stateEmitter.event;
  readonly onDidChange = this.changeEmitter.event;
  settings: Settings;
  lastFailure: string | undefined;
  launch: Launch | undefined;

  constructor(readonly output: vscode.OutputChannel) {
    this.settings = this.readSettings();
  }

  get state(): ServerState {
    return this._state;
  }

  private setState(state: ServerState): void {
    if (this._state !== state) {
      this._state = state;
      this.stateEmitter.fire(state);
    }
  }

  readSettings(): Settings {
    return readSettings(vscode.workspace.getConfiguration("dshQuery"));
  }

  /** The server's experimental capability block, once running. */
  capabilities(): Record<string, unknown> | undefined {
    const exp: unknown = this.client?.initializeResult?.capabilities?.experimental;
    if (!exp || typeof exp !== "object" || !("sessionQuery" in exp)) {
      return undefined;
    }
    const block = exp.sessionQuery;
    return block && typeof block === "object" ? (block as Record<string, unknown>) : undefined;
  }

  rpc(): Rpc | undefined {
    return this._state === "running" ? this : undefined;
  }

  async request<M extends Method>(method: M, params: Params<M>): Promise<Result<M>> {
    const client = this.client;
    if (!client || this._state !== "running") {
      throw new Error(
        this._state === "starting"
          ? "The Session Query server is still starting."
          : "The Session Query server is not running (Session Query: Restart Server).",
      );
    }
    const result = await client.sendRequest<Result<M>>(method, params);
    if (result === null && this._state !== "running") {
      throw new Error("The Session Query server stopped before answering.");
    }
    return result;
  }

  private spawnServer(launch: Launch, generation: number): ServerOptions {
    return () =>
      new Promise<ChildProcess>((resolve, reject) => {
        const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? os.homedir();
        this.output.appendLine(`[info] starting: ${[launch.command, ...launch.args].map((a) => JSON.stringify(a)).join(" ")}`);
        const child = spawn(launch.command, launch.args, {
          cwd,
          env: { ...process.env, PYTHONUNBUFFERED: "1" },
          stdio: ["pipe", "pipe", "pipe"],
        });
        this.process = child;
        child.stderr?.on("data", (data: Buffer) => this.stderr.push(data.toString("utf8")));
        child.once("spawn", () => resolve(child));
        child.once("error", (err) => reject(new Error(`cannot run ${JSON.stringify(launch.command)}: ${err.message}`)));
        child.once("exit", (code, signal) => {
          if (generation === this.generation && !this.stopping) {
            this.output.appendLine(`[info] server exited (${signal ?? `code ${code}`})`);
          }
        });
      });
  }

  private connectHub(launch: Launch): ServerOptions {
    return async (): Promise<StreamInfo> => {
      const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? os.homedir();
      this.output.appendLine(`[info] finding the hub: ${[launch.command, ...launch.args].map((a) => JSON.stringify(a)).join(" ")}`);
      const status = await ensureHub(launch, this.settings.initializationOptions, cwd);
      const socket = await connectSocket(status.socket);
      this.hub = status;
      this.output.appendLine(`[info] connected to hub ${status.key} (pid ${status.pid}) at ${status.socket}`);
      return { reader: socket, writer: socket, detached: true };
    };
  }

  private errorHandler(): ErrorHandler {
    return {
      error: (): ErrorHandlerResult => ({ action: ErrorAction.Continue, handled: true }),
      closed: (): CloseHandlerResult => {
        if (this.hubMode) {
          return { action: CloseAction.DoNotRestart, handled: true }; // reconnect() takes over
        }
        const now = Date.now();
        this.restarts = this.restarts.filter((t) => now - t < 180_000);
        if (this._state === "running" && this.restarts.length < 4) {
          this.restarts.push(now);
          this.output.appendLine("[warn] the server stopped unexpectedly; restarting it");
          return { action: CloseAction.Restart, handled: true };
        }
        return { action: CloseAction.DoNotRestart, handled: true };
      },
    };
  }

  async start(): Promise<boolean> {
    return this.connect(false);
  }

  /** Start (or, ``reconnecting``, start again after a hub connection dropped: no notification,
   * no private fallback until the last attempt). */
  private async connect(reconnecting: boolean, attempt = 0): Promise<boolean> {
    if (this.client) {
      return this._state === "running";
    }
    const generation = ++this.generation;
    this.stopping = false;
    this.stderr.clear();
    this.lastFailure = undefined;
    this.settings = this.readSettings();
    this.setState("starting");
    const fallback =
      this.settings.interpreter.length > 0
        ? []
        : await pythonExtensionInterpreter(() => {
            // the active interpreter changed: follow it while no interpreter is configured
            if (this.readSettings().interpreter.length === 0 && this._state !== "stopped") {
              void this.restart();
            }
          });
    if (generation !== this.generation || this.client) {
      return false; // stopped or restarted while we looked for an interpreter
    }
    const interpreter = fallback.length > 0 ? fallback : ["python3"];
    this.hubMode = usesHub(this.settings) && !this.privateFallback;
    const launch = this.hubMode ? hubLaunch(this.settings, interpreter) : serverLaunch(this.settings, interpreter);
    this.launch = launch;
    const clientOptions: LanguageClientOptions = {
      documentSelector: [],
      outputChannel: this.output,
      traceOutputChannel: this.output,
      initializationOptions: this.settings.initializationOptions,
      errorHandler: this.errorHandler(),
      initializationFailedHandler: () => false,
    };
    const serverOptions = this.hubMode ? this.connectHub(launch) : this.spawnServer(launch, generation);
    const client = new QuietLanguageClient(CLIENT_ID, CLIENT_NAME, serverOptions, clientOptions);
    this.client = client;
    client.onDidChangeState((e) => {
      if (generation !== this.generation) {
        return;
      }
      if (e.newState === State.Running) {
        this.setState("running");
      } else if (e.newState === State.Starting) {
        this.setState("starting");
      } else if (e.newState === State.Stopped && !this.stopping && this._state === "running") {
        if (this.hubMode) {
          this.reconnect(0);
        } else {
          this.fail(this.stderr.reason() ?? "the server stopped", false);
        }
      }
    });
    client.onNotification(Methods.didChange, (params: DidChangeParams) => {
      if (generation === this.generation) {
        this.changeEmitter.fire(params ?? {});
      }
    });
    try {
      await client.start();
      if (generation !== this.generation) {
        return false;
      }
      if (!client.isRunning()) {
        // vscode-languageclient 9 resolves start() when the connection closes during initialize
        throw new Error("Connection to server got closed during initialize");
      }
      this.setState("running");
      this.output.appendLine(`[info] server running (persistence ${JSON.stringify(this.settings.initializationOptions.persistence ?? "server default")})`);
      return true;
    } catch (err) {
      if (generation !== this.generation) {
        return false;
      }
      if (this.hubMode) {
        const reason = this.explain(err);
        await this.dropClient();
        if (reconnecting && attempt + 1 < RECONNECT_DELAYS_MS.length) {
          this.output.appendLine(`[warn] the hub is not back yet: ${reason}`);
          this.reconnect(attempt + 1);
          return false;
        }
        // Where the hub cannot be used (sockets refused, an old server): a private server.
        this.output.appendLine(`[warn] cannot use the hub (${reason}); starting a private server`);
        this.privateFallback = true;
        return this.connectPrivate();
      }
      // Give the process a moment to flush the stderr that says why.
      await new Promise((r) => setTimeout(r, 300));
      this.fail(this.explain(err));
      await this.dropClient();
      return false;
    }
  }

  /** After the hub went away: connect again (``hub ensure`` starts a new one) with back-off;
   * the views refresh once the state is running again. */
  private reconnect(attempt: number): void {
    const generation = this.generation;
    this.setState("starting");
    const delay = RECONNECT_DELAYS_MS[Math.min(attempt, RECONNECT_DELAYS_MS.length - 1)];
    this.output.appendLine(`[warn] lost the hub connection; reconnecting in ${delay} ms`);
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = setTimeout(() => {
      if (generation !== this.generation || this.stopping) {
        return;
      }
      void this.dropClient().then(() => this.connect(true, attempt));
    }, delay);
  }

  private async connectPrivate(): Promise<boolean> {
    await this.dropClient();
    return this.connect(false);
  }

  private explain(err: unknown): string {
    const message = formatError(err);
    const tail = this.stderr.reason();
    const generic = /connection got disposed|Connection to server got closed|Pending response rejected|read ECONNRESET|EPIPE/i;
    if (tail && generic.test(message)) {
      return tail;
    }
    return message || tail || "unknown error";
  }

  private fail(reason: string, starting = true): void {
    this.lastFailure = reason;
    this.output.appendLine(`[error] ${reason}`);
    this.setState("failed");
    const what = starting ? "failed to start" : "stopped";
    void vscode.window
      .showErrorMessage(`Session Query server ${what}: ${reason}`, "Show Output", "Restart Server")
      .then((choice) => {
        if (choice === "Show Output") {
          this.output.show(true);
        } else if (choice === "Restart Server") {
          void this.restart();
        }
      });
  }

  private async dropClient(): Promise<void> {
    const client = this.client;
    const child = this.process;
    this.client = undefined;
    this.process = undefined;
    if (client) {
      try {
        if (client.state !== State.Stopped) {
          await client.stop(2000);
        }
      } catch {
        // already gone
      }
      try {
        await client.dispose(1000);
      } catch {
        // already gone
      }
    }
    if (child && child.exitCode === null && child.signalCode === null) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          child.kill("SIGKILL");
          resolve();
        }, 2000);
        child.once("exit", () => {
          clearTimeout(timer);
          resolve();
        });
        child.kill("SIGTERM");
      });
    }
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.generation++;
    clearTimeout(this.reconnectTimer);
    await this.dropClient();
    this.setState("stopped");
  }

  async restart(): Promise<boolean> {
    this.output.appendLine("[info] restarting the server");
    await this.stop();
    this.privateFallback = false;
    return this.start();
  }

  dispose(): void {
    pythonWatch?.dispose();
    pythonWatch = undefined;
    void this.stop();
    this.stateEmitter.dispose();
    this.changeEmitter.dispose();
  }
}
