#!/usr/bin/env bash
# Runs a command with the embeddings sidecar up: starts it on a free loopback port, waits until it
# listens, exports EMBEDDINGS_URL (its /v1/embeddings), runs the command, and stops the sidecar.
#   embedder/with-sidecar.sh COMMAND [ARGS...]      (ARGS may use "$EMBEDDINGS_URL" via sh -c)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${EMBEDDER_BIN:-target/release/mcp-tool-search-embedder}
model=${MODEL_DIR:-.cache/models/all-MiniLM-L6-v2}
[ -x "$bin" ] || { echo "no sidecar at $bin: run 'make embedder'" >&2; exit 2; }
log=$(mktemp -t mcp-tool-search-embedder.XXXXXX.log)
"$bin" --model-dir "$model" --listen 127.0.0.1:0 > "$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do
  addr=$(sed -n 's/^listening on //p' "$log" | head -1)
  [ -n "$addr" ] && break
  kill -0 $pid 2>/dev/null || { cat "$log" >&2; exit 1; }
  sleep 0.1
done
[ -n "${addr:-}" ] || { echo "the sidecar did not start; see $log" >&2; exit 1; }
export EMBEDDINGS_URL="http://$addr/v1/embeddings"
"$@"
