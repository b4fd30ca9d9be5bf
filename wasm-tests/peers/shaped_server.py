"""An MCP server (Streamable HTTP, JSON responses, no sessions) written with the Python standard
library only, whose lists depend on who asks, as real servers' lists do: by the `Host` the
request was sent to (one process serving several hosts) or by the caller's `Authorization`
(a list shaped by the caller's rights, marked `cacheScope: "private"`, spec 2026-07-28
"Caching"). The Envoy end-to-end attack tests (tests/catalog_attacks_e2e.rs) put it behind the
filter.

    python shaped_server.py --spec spec.json --record requests.jsonl

The spec (JSON):

    {"sets": {"good": {"tools": [...], "prompts": [...], "resources": [...],
                       "resourceTemplates": [...]}, "evil": {...}},
     "default": "good",                       # the set of any other caller
     "by_host": {"evil.example": "evil"},     # Host (port and case ignored) -> set
     "by_authorization": {"Bearer alice": "admin"},   # checked before the host
     "private": false}                        # every list result says cacheScope "private"

Every HTTP request is appended to --record as one JSON line: {"method", "path", "host",
"headers" (lowercase names, each value as received), "rpc" (the JSON-RPC methods of the body,
"response" for a client's reply), "set" (the set that answered)}.

Prints "listening on 127.0.0.1:PORT" (flushed) once it accepts connections.
"""

import argparse
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

parser = argparse.ArgumentParser()
parser.add_argument("--spec", required=True)
parser.add_argument("--record", required=True)
parser.add_argument("--listen", default="127.0.0.1:0")
args = parser.parse_args()

with open(args.spec, encoding="utf-8") as f:
    SPEC = json.load(f)
SETS = SPEC["sets"]
DEFAULT = SPEC.get("default", next(iter(SETS)))
BY_HOST = {k.lower(): v for k, v in SPEC.get("by_host", {}).items()}
BY_AUTH = SPEC.get("by_authorization", {})
PRIVATE = bool(SPEC.get("private", False))
VERSIONS = ["2025-03-26", "2025-06-18", "2025-11-25"]
LISTS = {
    "tools/list": "tools",
    "prompts/list": "prompts",
    "resources/list": "resources",
    "resources/templates/list": "resourceTemplates",
}
record_lock = threading.Lock()


def record(line: dict) -> None:
    with record_lock, open(args.record, "a", encoding="utf-8") as f:
        f.write(json.dumps(line, sort_keys=True) + "\n")


def set_for(headers) -> str:
    auth = headers.get("authorization")
    if auth is not None and auth in BY_AUTH:
        return BY_AUTH[auth]
    host = (headers.get("host") or "").lower()
    # "good.example:10000" and "[::1]:80" alike: the port is not the host.
    if host.startswith("["):
        host = host.split("]", 1)[0] + "]"
    else:
        host = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    return BY_HOST.get(host, DEFAULT)


def answer(message: dict, chosen: str):
    """The response to one JSON-RPC message (None for a notification or a client's reply)."""
    if "method" not in message or "id" not in message:
        return None
    entries = SETS[chosen]
    method, rid = message["method"], message["id"]
    params = message.get("params") or {}

    def ok(result):
        return {"jsonrpc": "2.0", "id": rid, "result": result}

    if method == "initialize":
        asked = params.get("protocolVersion")
        caps = {"tools": {"listChanged": False}}
        if entries.get("prompts"):
            caps["prompts"] = {"listChanged": False}
        if entries.get("resources") or entries.get("resourceTemplates"):
            caps["resources"] = {"listChanged": False}
        return ok(
            {
                "protocolVersion": asked if asked in VERSIONS else VERSIONS[-1],
                "capabilities": caps,
                "serverInfo": {"name": "shaped-server", "version": "0.1.0"},
            }
        )
    if method == "ping":
        return ok({})
    if method in LISTS:
        member = LISTS[method]
        result = {member: entries.get(member, [])}
        if PRIVATE:
            result["cacheScope"] = "private"
        return ok(result)
    if method == "tools/call":
        name = params.get("name")
        if not any(t.get("name") == name for t in entries.get("tools", [])):
            return {
                "jsonrpc": "2.0",
                "id": rid,
                "error": {"code": -32602, "message": f"unknown tool {name!r}"},
            }
        text = json.dumps({"tool": name, "set": chosen, "ok": True}, sort_keys=True)
        return ok({"content": [{"type": "text", "text": text}]})
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "error": {"code": -32601, "message": f"method not found: {method}"},
    }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *a):  # stderr stays for errors
        pass

    def body(self) -> bytes:
        if "chunked" in (self.headers.get("transfer-encoding") or "").lower():
            out = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return out
                out += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    def headers_seen(self) -> dict:
        seen = {}
        for name, value in self.headers.items():
            seen.setdefault(name.lower(), []).append(value)
        return seen

    def send(self, status: int, payload=None) -> None:
        data = b"" if payload is None else json.dumps(payload).encode()
        self.send_response(status)
        if payload is not None:
            self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        if data:
            self.wfile.write(data)

    def do_POST(self):
        raw = self.body()
        headers = {k.lower(): v for k, v in self.headers.items()}
        chosen = set_for(headers)
        line = {
            "method": "POST",
            "path": self.path,
            "host": headers.get("host"),
            "headers": self.headers_seen(),
            "set": chosen,
            "rpc": [],
        }
        try:
            parsed = json.loads(raw)
        except ValueError:
            record(line)
            return self.send(
                400,
                {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse error"}},
            )
        messages = parsed if isinstance(parsed, list) else [parsed]
        for m in messages:
            if isinstance(m, dict):
                line["rpc"].append(m.get("method") or "response")
        record(line)
        if not self.path.split("?", 1)[0].endswith("/mcp"):
            return self.send(404, {"error": "not an MCP path"})
        replies = [r for r in (answer(m, chosen) for m in messages if isinstance(m, dict)) if r]
        if not replies:
            return self.send(202)
        self.send(200, replies if isinstance(parsed, list) else replies[0])

    def do_GET(self):
        record({"method": "GET", "path": self.path, "host": self.headers.get("host"),
                "headers": self.headers_seen(), "set": None, "rpc": []})
        # No server-initiated stream (spec 2025-11-25 "Listening for Messages from the Server").
        self.send(405, {"error": "no GET stream"})

    def do_DELETE(self):
        record({"method": "DELETE", "path": self.path, "host": self.headers.get("host"),
                "headers": self.headers_seen(), "set": None, "rpc": []})
        self.send(405, {"error": "no sessions"})


host, port = args.listen.rsplit(":", 1)
server = ThreadingHTTPServer((host, int(port)), Handler)
server.daemon_threads = True
print(f"listening on {server.server_address[0]}:{server.server_address[1]}", flush=True)
try:
    server.serve_forever()
except KeyboardInterrupt:
    sys.exit(0)
