#!/usr/bin/env bash
# Runs Envoy with the filter in front of any MCP server:
#   [WASM=target/dist/mcp_tool_search_code.wasm] envoy/run.sh UPSTREAM_HOST:PORT LISTEN_PORT [PLUGIN_CONFIG_FILE] [ADMIN_PORT]
# Renders envoy/demo.yaml's marked lines (@upstream, @listen, @plugin-config, @admin) into a
# temporary config and execs Envoy on it; PLUGIN_CONFIG_FILE is merged over the shipped plugin
# configuration (printed at start). Run from the repository root.
set -euo pipefail
upstream=${1:?usage: envoy/run.sh UPSTREAM_HOST:PORT LISTEN_PORT [PLUGIN_CONFIG_FILE] [ADMIN_PORT]}
listen=${2:?listen port missing}
plugin_config=${3:-}
admin=${4:-9901}
envoy_bin=${ENVOY_BIN:-.venv/bin/envoy}
host=${upstream%:*}
port=${upstream##*:}
[[ "$host" != "$upstream" && "$port" =~ ^[0-9]+$ ]] || { echo "UPSTREAM must be HOST:PORT, got '$upstream'" >&2; exit 2; }
[[ "$listen" =~ ^[0-9]+$ ]] || { echo "LISTEN must be a port number, got '$listen'" >&2; exit 2; }
wasm=${WASM:-target/dist/mcp_tool_search.wasm}
[ -f "$wasm" ] || { echo "no $wasm: run 'make wasm' first" >&2; exit 2; }
config_json=""
if [ -n "$plugin_config" ]; then
  # Validate as JSON here; the filter itself reports anything it does not accept.
  config_json=$(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1])), separators=(",",":")))' "$plugin_config") \
    || { echo "PLUGIN_CONFIG $plugin_config is not valid JSON" >&2; exit 2; }
fi
out=$(mktemp -t mcp-tool-search-envoy.XXXXXX.yaml)
python3 - "$host" "$port" "$listen" "$admin" "$config_json" "$wasm" > "$out" <<'PY'
import json, sys
host, port, listen, admin, plugin, wasm = sys.argv[1:7]

def merge(base, over):
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for k, v in over.items():
            out[k] = merge(base.get(k), v) if k in base else v
        return out
    return over

for line in open("envoy/demo.yaml"):
    if "# @upstream" in line:
        line = line.replace("127.0.0.1, port_value: 18081", f"{host}, port_value: {port}")
    elif "# @listen" in line:
        line = line.replace("port_value: 10000", f"port_value: {listen}")
    elif "filename: target/dist/mcp_tool_search.wasm" in line:
        line = line.replace("target/dist/mcp_tool_search.wasm", wasm)
    elif "# @admin" in line:
        line = line.replace("port_value: 9901", f"port_value: {admin}")
    elif "# @plugin-config" in line:
        start = line.index("value: '") + len("value: '")
        end = line.rindex("'")
        shipped = json.loads(line[start:end].replace("''", "'"))
        # The user's file is merged over the shipped defaults (objects key by key), so that it
        # changes what it names and keeps the rest, such as hold_request_headers, which the
        # shipped Envoy config's allow_on_headers_stop_iteration goes with.
        effective = merge(shipped, json.loads(plugin)) if plugin else shipped
        text = json.dumps(effective, separators=(",", ":"))
        print("effective plugin configuration: " + json.dumps(effective, indent=2), file=sys.stderr)
        line = line[:start] + text.replace("'", "''") + line[end:]
    sys.stdout.write(line)
PY
echo "envoy config: $out" >&2
exec "$envoy_bin" -c "$out" --concurrency 2 --base-id "${BASE_ID:-$listen}" --log-level "${LOG_LEVEL:-info}"
