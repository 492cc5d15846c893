"""The protocol-overhead baseline: a bare JSON-RPC echo loop over stdio with msgspec.

Same framing as the server (LSP ``Content-Length``), same client, no pygls, no asyncio, no worker
threads: read a frame, decode it, answer ``{"result": params}``. ``python -m bench.echo``.
"""

from __future__ import annotations

import sys

import msgspec


def main() -> None:
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    decode, encode = msgspec.json.decode, msgspec.json.encode
    while True:
        length = None
        while True:
            line = stdin.readline()
            if not line:
                return
            if line in (b"\r\n", b"\n"):
                if length is not None:
                    break
                continue
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        message = decode(stdin.read(length))
        if "id" not in message:
            if message.get("method") == "exit":
                return
            continue
        method = message.get("method")
        result = {"capabilities": {}} if method == "initialize" else (
            None if method == "shutdown" else message.get("params"))
        body = encode({"jsonrpc": "2.0", "id": message["id"], "result": result})
        stdout.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        stdout.flush()


if __name__ == "__main__":
    main()
