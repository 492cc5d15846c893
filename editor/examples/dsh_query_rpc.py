#!/usr/bin/env python3
"""Talk to dsh_query_server over stdio with nothing but the standard library.

    python3 editor/examples/dsh_query_rpc.py sessionQuery/searchSessions '{"query": "fake clock"}'

SERVER overrides the command (default: python3 -m dsh_query_server --demo). With the package
installed, dsh_query_server.client.StdioClient does the same in two lines (see editor/README.md).
"""

from __future__ import annotations

import itertools
import json
import os
import shlex
import subprocess
import sys


class Rpc:
    def __init__(self, command: list[str], init_options: dict | None = None) -> None:
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.ids = itertools.count(1)
        self.notifications: list[dict] = []
        self.request("initialize", {"processId": os.getpid(), "capabilities": {},
                                    "initializationOptions": init_options or {}})
        self.notify("initialized", {})

    def _send(self, message: dict) -> None:
        body = json.dumps(message).encode("utf-8")
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def _receive(self) -> dict:
        length = None
        while (line := self.proc.stdout.readline().strip()) or length is None:
            if not line and self.proc.poll() is not None:
                raise ConnectionError("the server exited")
            name, _, value = line.partition(b":")
            if name.lower() == b"content-length":
                length = int(value)
        return json.loads(self.proc.stdout.read(length))

    def notify(self, method: str, params) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params=None):
        msg_id = next(self.ids)
        self._send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params or {}})
        while True:
            message = self._receive()
            if message.get("id") == msg_id and "method" not in message:
                if "error" in message:  # {"code", "message", "data": {"code": "SESSION_QUERY_..."}}
                    raise RuntimeError(json.dumps(message["error"]))
                return message.get("result")
            self.notifications.append(message)  # e.g. sessionQuery/didChange

    def close(self) -> None:
        self.request("shutdown")
        self.notify("exit", None)
        self.proc.wait(10)


if __name__ == "__main__":
    server = shlex.split(os.environ.get("SERVER", "python3 -m dsh_query_server --demo"))
    rpc = Rpc(server, {"index": ":memory:"})
    try:
        params = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
        print(json.dumps(rpc.request(sys.argv[1] if len(sys.argv) > 1 else "sessionQuery/listSessions", params),
                         indent=2, ensure_ascii=False))
    finally:
        rpc.close()
