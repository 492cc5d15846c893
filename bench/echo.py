"""The protocol-overhead baseline: a bare JSON-RPC echo loop over stdio with msgspec.

Same framing code as the server (server/transport.py), same client, no pygls, no asyncio, no worker
threads: read a frame, decode it, answer ``{"result": params}``. ``python -m bench.echo``.
"""

from __future__ import annotations

import sys

import msgspec

from dsh_query_server.server.transport import frame, read_frame


def main() -> None:
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    decode, encode = msgspec.json.decode, msgspec.json.encode
    while (body := read_frame(stdin)) is not None:
        message = decode(body)
        if "id" not in message:
            if message.get("method") == "exit":
                return
            continue
        method = message.get("method")
        result = (
            {"capabilities": {}}
            if method == "initialize"
            else (None if method == "shutdown" else message.get("params"))
        )
        stdout.write(frame(encode({"jsonrpc": "2.0", "id": message["id"], "result": result})))
        stdout.flush()


if __name__ == "__main__":
    main()
