#!/usr/bin/env bash
# `make gateway`: three MCP servers of different kinds behind one Envoy endpoint
# (envoy/gateway.yaml: the filter, then Envoy's mcp and mcp_router), a search across them, a
# call through the router, and a curl flow to paste. Ctrl-C stops everything it started.
#   catalog     the rmcp catalog server (wasm-tests/data/catalog-300.jsonl), 127.0.0.1:18081
#   python      the Python SDK's FastMCP (wasm-tests/peers/fastmcp_server.py), :18082
#   everything  the TypeScript SDK's server-everything, :18083
# Envoy listens on 127.0.0.1:10000 (admin :9901). LISTEN, ADMIN, CATALOG_PORT, PYTHON_PORT and
# EVERYTHING_PORT change the ports (envoy/gateway.yaml is rewritten to match).
set -euo pipefail
cd "$(dirname "$0")/.."
ENVOY_BIN=${ENVOY_BIN:-.venv/bin/envoy}
PYTHON=${MCP_PYTHON:-.venv/bin/python}
SERVER_EVERYTHING=${SERVER_EVERYTHING:-.cache/node-peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js}
WASM=${FILTER_WASM:-target/dist/mcp_tool_search.wasm}
CATALOG=${CATALOG:-wasm-tests/data/catalog-300.jsonl}
CATALOG_SERVER=${CATALOG_SERVER:-target/release/catalog-server}
LISTEN=${LISTEN:-10000}
ADMIN=${ADMIN:-9901}
CATALOG_PORT=${CATALOG_PORT:-18081}
PYTHON_PORT=${PYTHON_PORT:-18082}
EVERYTHING_PORT=${EVERYTHING_PORT:-18083}
logs=$(mktemp -d -t mcp-tool-search-gateway.XXXXXX)
pids=()
stop() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  echo "stopped (logs in $logs)"
}
trap stop EXIT
trap 'exit 130' INT TERM
step() { printf '==> %s\n' "$*"; }
wait_port() {
  for _ in $(seq 1 200); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "nothing listens on port $1; see $logs" >&2
  return 1
}
for f in "$ENVOY_BIN" "$PYTHON" "$SERVER_EVERYTHING" "$WASM" "$CATALOG_SERVER"; do
  [ -e "$f" ] || { echo "missing $f: run 'make gateway' (it builds and installs what this needs)" >&2; exit 2; }
done

step "catalog: the rmcp catalog server ($(wc -l < "$CATALOG") tools) on 127.0.0.1:$CATALOG_PORT"
"$CATALOG_SERVER" --tools "$CATALOG" --listen "127.0.0.1:$CATALOG_PORT" > "$logs/catalog.log" 2>&1 &
pids+=($!)
step "python: FastMCP (Python SDK 1.x) on 127.0.0.1:$PYTHON_PORT"
"$PYTHON" wasm-tests/peers/fastmcp_server.py --port "$PYTHON_PORT" --record "$logs/python.record" > "$logs/python.log" 2>&1 &
pids+=($!)
step "everything: server-everything (TypeScript SDK) on 127.0.0.1:$EVERYTHING_PORT"
PORT=$EVERYTHING_PORT node "$SERVER_EVERYTHING" streamableHttp > "$logs/everything.log" 2>&1 &
pids+=($!)
wait_port "$CATALOG_PORT" && wait_port "$PYTHON_PORT" && wait_port "$EVERYTHING_PORT"

step "Envoy $("$ENVOY_BIN" --version | grep -o '[0-9]*\.[0-9]*\.[0-9]*' | head -1): the filter, mcp, mcp_router on 127.0.0.1:$LISTEN (admin :$ADMIN)"
sed -e "s#target/dist/mcp_tool_search.wasm#$WASM#" \
  -e "s#port_value: 9901}#port_value: $ADMIN}#" -e "s#port_value: 10000}#port_value: $LISTEN}#" \
  -e "s#port_value: 18081}#port_value: $CATALOG_PORT}#" -e "s#port_value: 18082}#port_value: $PYTHON_PORT}#" \
  -e "s#port_value: 18083}#port_value: $EVERYTHING_PORT}#" envoy/gateway.yaml > "$logs/gateway.yaml"
"$ENVOY_BIN" -c "$logs/gateway.yaml" --concurrency 2 --base-id "$LISTEN" --log-level "${LOG_LEVEL:-info}" > "$logs/envoy.log" 2>&1 &
pids+=($!)
wait_port "$LISTEN"

url="http://127.0.0.1:$LISTEN/mcp"
accept='application/json, text/event-stream'
step "initialize (mcp_router initializes every server and joins their sessions into one)"
session=$(curl -sS -D - -o "$logs/init.body" -X POST "$url" -H 'content-type: application/json' -H "accept: $accept" \
  -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"gateway-demo","version":"1"}}}' \
  | tr -d '\r' | awk -F': ' 'tolower($1)=="mcp-session-id"{print $2}')
[ -n "$session" ] || { echo "no mcp-session-id from initialize; see $logs" >&2; exit 1; }
jsonrpc() { python3 -c '
import sys
raw = sys.stdin.read()
datas = [l[5:].strip() for l in raw.splitlines() if l.startswith("data:") and l[5:].strip()]
print(datas[-1] if datas else raw)'; }
call() {
  curl -sS -X POST "$url" -H 'content-type: application/json' -H "accept: $accept" \
    -H "mcp-session-id: $session" -H 'mcp-protocol-version: 2025-06-18' -d "$1" | jsonrpc
}

step "tools/list through the filter"
call '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' | python3 -c '
import json, sys
tools = json.load(sys.stdin)["result"]["tools"]
print(f"    {len(tools)} tools listed: " + ", ".join(t["name"] for t in tools))
print("    " + tools[0]["description"][-160:])'

step "list_tool_groups: one group per server"
call '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_tool_groups","arguments":{}}}' \
  | python3 -c 'import json, sys; print("    " + json.load(sys.stdin)["result"]["content"][0]["text"])'

query="the sum of two numbers"
step "tool_search {\"query\": \"$query\"} across every server"
call "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"tool_search\",\"arguments\":{\"query\":\"$query\"}}}" \
  | python3 -c '
import json, sys
for i, t in enumerate(json.loads(json.load(sys.stdin)["result"]["content"][0]["text"]), 1):
    name, about = t["name"], t.get("description", "")[:90]
    print(f"    {i}. {name}: {about}")'

step "tools/call everything__get-sum {\"a\": 2, \"b\": 3}: the router strips the prefix and calls server-everything"
call '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"everything__get-sum","arguments":{"a":2,"b":3}}}' \
  | python3 -c 'import json, sys; r = json.load(sys.stdin); print("    " + json.dumps(r.get("result", r))[:200])'

cat <<TXT

MCP endpoint: $url   (servers: catalog, python, everything; tool names are SERVER__TOOL)

Try it (this session's id is reused):
  curl -s -X POST $url -H 'content-type: application/json' -H 'accept: $accept' \\
    -H 'mcp-session-id: $session' -H 'mcp-protocol-version: 2025-06-18' \\
    -d '{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"refund a payment","group":"catalog"}}}'
  curl -s -X POST $url/search -d '{"query": "github issue"}'
  curl -s $url/search/health

Or point any MCP client at $url. Ctrl-C stops Envoy and the servers.
TXT
wait
