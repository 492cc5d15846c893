// Turning JSON-RPC failures into one short line for a notification (protocol.md §2).

export const METHOD_NOT_FOUND = -32601;
export const REQUEST_CANCELLED = -32800;

export interface RpcFailure {
  code?: number;
  message: string;
  dataCode?: string;
}

/** Reads a vscode-jsonrpc ResponseError, a plain Error or anything thrown. */
export function describeError(err: unknown): RpcFailure {
  if (err && typeof err === "object") {
    const e = err as { code?: unknown; message?: unknown; data?: unknown };
    const message = typeof e.message === "string" && e.message !== "" ? e.message : String(err);
    const code = typeof e.code === "number" ? e.code : undefined;
    let dataCode: string | undefined;
    if (e.data && typeof e.data === "object" && typeof (e.data as { code?: unknown }).code === "string") {
      dataCode = (e.data as { code: string }).code;
    }
    return { code, message, dataCode };
  }
  return { message: String(err) };
}

/** `SESSION_QUERY_SESSION_NOT_FOUND: session "x" not found`, or the bare message. */
export function formatError(err: unknown): string {
  const f = describeError(err);
  if (f.dataCode) {
    return `${f.dataCode}: ${f.message}`;
  }
  if (f.code === METHOD_NOT_FOUND) {
    return `the server does not support this request (${f.message})`;
  }
  return f.message;
}

export function isCancellation(err: unknown): boolean {
  const f = describeError(err);
  return f.code === REQUEST_CANCELLED || f.dataCode === "SESSION_QUERY_ABORTED";
}

export function isMethodNotFound(err: unknown): boolean {
  return describeError(err).code === METHOD_NOT_FOUND;
}

/** The last lines a failed process wrote to stderr, for "failed to start: <why>". */
export class StderrTail {
  private text = "";
  constructor(private readonly max = 4000) {}
  push(chunk: string): void {
    this.text = (this.text + chunk).slice(-this.max);
  }
  clear(): void {
    this.text = "";
  }
  /** The most telling line: the last non-empty one (a Python traceback ends with the error). */
  reason(): string | undefined {
    const lines = this.text
      .split(/\r?\n/)
      .map((l) => l.trim())
      .filter((l) => l !== "");
    return lines.length > 0 ? lines[lines.length - 1] : undefined;
  }
}
