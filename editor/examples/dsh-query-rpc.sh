#!/usr/bin/env bash
# Talk to dsh_query_server over stdio from bash: LSP framing (Content-Length) by hand.
#   editor/examples/dsh-query-rpc.sh sessionQuery/listSessions '{}'
#   editor/examples/dsh-query-rpc.sh sessionQuery/readEvent '{"sessionId":"fix-flaky-tests","seq":3}'
# SERVER overrides the command (default: python3 -m dsh_query_server --demo). Needs bash 4+.
set -euo pipefail
export LC_ALL=C # lengths and reads count bytes, as Content-Length does

method=${1:?usage: $0 METHOD [PARAMS-JSON]}
params=${2:-'{}'}
read -r -a server <<<"${SERVER:-python3 -m dsh_query_server --demo}"

coproc SRV { "${server[@]}" 2>/dev/null; }
trap 'kill "$SRV_PID" 2>/dev/null || true' EXIT

send() { # one JSON-RPC message
  printf 'Content-Length: %d\r\n\r\n%s' "${#1}" "$1" >&"${SRV[1]}"
}

recv() { # the next message body, into $REPLY
  local line length=0
  while IFS= read -r line <&"${SRV[0]}"; do
    line=${line%$'\r'}
    [[ -z $line ]] && break
    [[ ${line,,} == content-length:* ]] && length=${line#*:} && length=${length// /}
  done
  IFS= read -r -N "$length" REPLY <&"${SRV[0]}"
}

call() { # request $2 with params $3 as id $1; prints the response, skips notifications
  send "{\"jsonrpc\":\"2.0\",\"id\":$1,\"method\":\"$2\",\"params\":$3}"
  while recv; do
    [[ $REPLY == *"\"id\":$1"[,\}]* ]] && { printf '%s\n' "$REPLY"; return; }
  done
}

call 1 initialize '{"capabilities":{},"initializationOptions":{"index":":memory:"}}' >/dev/null
send '{"jsonrpc":"2.0","method":"initialized","params":{}}'
call 2 "$method" "$params"
call 3 shutdown null >/dev/null
send '{"jsonrpc":"2.0","method":"exit","params":null}'
