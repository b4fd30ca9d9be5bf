#!/usr/bin/env bash
# `make demo`: the catalog MCP server (300 tools) behind Envoy with the filter, a sample
# tool_search, and a curl flow to paste. `make demo MODE=code`: code mode's module instead, and a
# script that searches, calls three tools and returns one answer. Ctrl-C stops everything it
# started.
set -euo pipefail
cd "$(dirname "$0")/.."
LISTEN=${LISTEN:-10000}
UPSTREAM_PORT=${UPSTREAM_PORT:-18081}
ADMIN=${ADMIN:-9901}
CATALOG=${CATALOG:-wasm-tests/data/catalog-300.jsonl}
server=${CATALOG_SERVER:-target/release/catalog-server}
logs=$(mktemp -d -t mcp-tool-search-demo.XXXXXX)
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
  for _ in $(seq 1 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "nothing listens on port $1; see $logs" >&2
  return 1
}

step "starting the catalog MCP server ($(wc -l < "$CATALOG") tools from $CATALOG) on 127.0.0.1:$UPSTREAM_PORT"
"$server" --tools "$CATALOG" --listen "127.0.0.1:$UPSTREAM_PORT" > "$logs/catalog.log" 2>&1 &
pids+=($!)
wait_port "$UPSTREAM_PORT"

plugin_config=""
wasm=target/dist/mcp_tool_search.wasm
if [ "${MODE:-search}" = code ]; then
  wasm=target/dist/mcp_tool_search_code.wasm
  plugin_config="$logs/plugin.json"
  echo '{"mode":"code"}' > "$plugin_config"
elif [ "${EMBEDDINGS:-0}" = 1 ]; then
  EMBED_PORT=${EMBED_PORT:-18090}
  step "starting the embeddings sidecar (all-MiniLM-L6-v2) on 127.0.0.1:$EMBED_PORT"
  target/release/mcp-tool-search-embedder --model-dir .cache/models/all-MiniLM-L6-v2 \
    --listen "127.0.0.1:$EMBED_PORT" > "$logs/embedder.log" 2>&1 &
  pids+=($!)
  wait_port "$EMBED_PORT"
  plugin_config="$logs/plugin.json"
  cat > "$plugin_config" <<JSON
{"mcp_paths":["/mcp"],"hold_request_headers":true,"eager_patterns":["github_get_*"],
 "search":{"ranking":"hybrid","embeddings":{"cluster":"embeddings","model_id":"all-MiniLM-L6-v2","dimensions":384,"timeout":"5s"}}}
JSON
fi

step "starting Envoy $(.venv/bin/envoy --version | grep -o '[0-9]*\.[0-9]*\.[0-9]*' | head -1) with the filter on 127.0.0.1:$LISTEN (admin :$ADMIN)"
WASM=$wasm BASE_ID=$LISTEN envoy/run.sh "127.0.0.1:$UPSTREAM_PORT" "$LISTEN" "$plugin_config" "$ADMIN" > "$logs/envoy.log" 2>&1 &
pids+=($!)
wait_port "$LISTEN"

url="http://127.0.0.1:$LISTEN/mcp"
accept='application/json, text/event-stream'
step "initialize"
session=$(curl -sS -D - -o "$logs/init.body" -X POST "$url" -H 'content-type: application/json' -H "accept: $accept" \
  -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"demo","version":"1"}}}' \
  | tr -d '\r' | awk -F': ' 'tolower($1)=="mcp-session-id"{print $2}')
[ -n "$session" ] || { echo "no mcp-session-id from initialize; see $logs" >&2; exit 1; }
curl -sS -o /dev/null -X POST "$url" -H 'content-type: application/json' -H "accept: $accept" \
  -H "mcp-session-id: $session" -H 'mcp-protocol-version: 2025-11-25' \
  -d '{"jsonrpc":"2.0","method":"notifications/initialized"}'

# The server may answer in JSON or SSE: print the JSON-RPC message either way.
jsonrpc() { python3 -c '
import json, sys
raw = sys.stdin.read()
datas = [l[5:].strip() for l in raw.splitlines() if l.startswith("data:") and l[5:].strip()]
print(datas[-1] if datas else raw)'; }
call() {
  curl -sS -X POST "$url" -H 'content-type: application/json' -H "accept: $accept" \
    -H "mcp-session-id: $session" -H 'mcp-protocol-version: 2025-11-25' -d "$1" | jsonrpc
}

step "tools/list through the filter"
call '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' | python3 -c '
import json, sys
tools = json.load(sys.stdin)["result"]["tools"]
print(f"    {len(tools)} tools listed instead of '"$(wc -l < "$CATALOG")"': " + ", ".join(t["name"] for t in tools))'

if [ "${MODE:-search}" != code ] && [ -n "$plugin_config" ]; then
  step "waiting for the tools to be embedded"
  for _ in $(seq 1 120); do
    embedded=$(curl -s "http://127.0.0.1:$LISTEN/mcp/search/health" | python3 -c 'import json,sys; print(sum(c["embedded"] for c in json.load(sys.stdin)["catalogs"].values()))' 2>/dev/null || echo 0)
    [ "$embedded" -ge "$(wc -l < "$CATALOG")" ] && break
    sleep 1
  done
  echo "    $embedded tools embedded"
fi

if [ "${MODE:-search}" = code ]; then
  script='const find = (q) => catalog.tools.search({query: q, limit: 1})[0].name;
const issue = find("get a github issue"), message = find("post a message to a slack channel"),
      events = find("list google calendar events");
const [i, m, e] = await Promise.all([
  tools.call(issue, {owner: "acme", repo: "shop", issue_number: 42}),
  tools.call(message, {channel: "#ops", text: "issue 42 triaged"}),
  tools.call(events, {calendar_id: "primary"}),
]);
const ok = (r) => JSON.parse(r.content[0].text).ok;
return {called: [issue, message, events], allOk: [i, m, e].every(ok)};'
  step "run_script: one script searches the catalog, calls three tools, returns one answer"
  printf '%s
' "$script" | sed 's/^/    | /'
  body=$(python3 -c 'import json,sys; print(json.dumps({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"run_script","arguments":{"script":sys.argv[1]}}}))' "$script")
  call "$body" | python3 -c '
import json, sys
result = json.load(sys.stdin)["result"]
print("    isError:", result["isError"])
print("    answer:", result["content"][0]["text"])'
  cat <<TXT

MCP endpoint: $url

Try it (this session's id is reused):
  curl -s -X POST $url -H 'content-type: application/json' -H 'accept: $accept' \\
    -H 'mcp-session-id: $session' -H 'mcp-protocol-version: 2025-11-25' \\
    -d '{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"run_script","arguments":{"script":"return catalog.tools.search(\\"refund a payment\\").map(t => t.name)"}}}'
  curl -s http://127.0.0.1:$ADMIN/stats | grep mcp_tool_search.script

Or point any MCP client at $url. Ctrl-C stops Envoy and the server.
TXT
  wait
  exit 0
fi

query="refund a customer payment"
step "tool_search {\"query\": \"$query\", \"limit\": 3}"
call "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"tool_search\",\"arguments\":{\"query\":\"$query\",\"limit\":3}}}" \
  | python3 -c '
import json, sys
result = json.load(sys.stdin)["result"]
tools = json.loads(result["content"][0]["text"])
for i, t in enumerate(tools, 1):
    name, about = t["name"], t.get("description", "")
    print(f"    {i}. {name}: {about}")
print("    _meta:", json.dumps(result.get("_meta", {})))
print("    first definition, as the upstream declared it:")
print("    " + json.dumps(tools[0]))'

cat <<TXT

MCP endpoint: $url

Try it (this session's id is reused):
  curl -s -X POST $url -H 'content-type: application/json' -H 'accept: $accept' \\
    -H 'mcp-session-id: $session' -H 'mcp-protocol-version: 2025-11-25' \\
    -d '{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"post a message to slack"}}}'
  curl -s -X POST $url -H 'content-type: application/json' -H 'accept: $accept' \\
    -H 'mcp-session-id: $session' -H 'mcp-protocol-version: 2025-11-25' \\
    -d '{"jsonrpc":"2.0","id":11,"method":"tools/list"}'
  curl -s http://127.0.0.1:$ADMIN/stats | grep mcp_tool_search

Or point any MCP client at $url. Ctrl-C stops Envoy and the server.
TXT
wait
