// Finding the user's hub (hub.md §3): `dsh-query hub ensure` finds or starts it and prints its
// status; the extension then opens its Unix socket. Node only (no vscode API), so the tests run
// it against the real Python.

import { spawn } from "node:child_process";
import * as net from "node:net";
import type { HubStatus } from "./protocol.gen";
import { HUB_OPTIONS_ENV, type Launch } from "./settings";

export type { HubStatus };

/** How long `dsh-query hub ensure` may take (the hub waits up to 10 s for its socket). */
const ENSURE_TIMEOUT_MS = 20_000;

/** Runs `launch` (`hub ensure`) and reads the status it prints (`hub/status`, hub.md §2);
 * rejects with its last stderr line when it fails. */
export function ensureHub(launch: Launch, options: Record<string, unknown>, cwd: string): Promise<HubStatus> {
  return new Promise<HubStatus>((resolve, reject) => {
    const child = spawn(launch.command, launch.args, {
      cwd,
      env: { ...process.env, [HUB_OPTIONS_ENV]: JSON.stringify(options) },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error("dsh-query hub ensure did not answer in time"));
    }, ENSURE_TIMEOUT_MS);
    child.stdout?.on("data", (d: Buffer) => (out += d.toString("utf8")));
    child.stderr?.on("data", (d: Buffer) => (err += d.toString("utf8")));
    child.once("error", (e) => {
      clearTimeout(timer);
      reject(new Error(`cannot run ${JSON.stringify(launch.command)}: ${e.message}`));
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      try {
        const status = JSON.parse(out) as HubStatus;
        if (code === 0 && typeof status?.socket === "string") {
          resolve(status);
          return;
        }
      } catch {
        // not JSON: the reason is on stderr
      }
      const lines = err.trim().split("\n").filter((l) => l.trim() !== "");
      reject(new Error(lines.length > 0 ? lines[lines.length - 1] : `dsh-query hub ensure exited with ${code}`));
    });
  });
}

/** A stream to the hub's socket, connected. */
export function connectSocket(path: string): Promise<net.Socket> {
  return new Promise<net.Socket>((resolve, reject) => {
    const socket = net.connect(path);
    socket.once("connect", () => {
      socket.removeAllListeners("error");
      resolve(socket);
    });
    socket.once("error", (e) => reject(new Error(`cannot connect to ${path}: ${e.message}`)));
  });
}

