#!/usr/bin/env python3
"""Seeds the fuzz corpora from testdata/ (wire samples, MetaTool tool lines and queries) and a
few hand-written edge shapes, in the input formats of src/format.rs. `make fuzz` runs it when a
corpus directory is missing; the committed corpora are these seeds after fuzzing and
`cargo fuzz cmin`. Usage: seed.py [OUT_DIR] (default: corpus/ next to this file)."""

import base64
import hashlib
import json
import pathlib
import struct
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[2]
WIRE = ROOT / "testdata" / "wire-samples"
METATOOL = ROOT / "testdata" / "metatool"
OUT = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "corpus"

N_REQUEST_CONFIGS = 8
N_LIST_CONFIGS = 8


def put(target, data):
    if isinstance(data, str):
        data = data.encode()
    d = OUT / target
    d.mkdir(parents=True, exist_ok=True)
    (d / hashlib.sha1(data).hexdigest()).write_bytes(data)


def jsonl(path):
    return [line for line in path.read_text().splitlines() if line.strip()]


def content_type(headers_file):
    for line in (WIRE / headers_file).read_text().splitlines():
        k, _, v = line.partition(":")
        if k.lower() == "content-type":
            return v.strip()
    return ""


TOOLS = jsonl(METATOOL / "tools.jsonl")
QUERIES = [json.loads(q)["query"] for q in jsonl(METATOOL / "queries.jsonl")[::700]]


def rpc(method, params=None, id_=1):
    m = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        m["params"] = params
    return json.dumps(m)


def call(name, arguments):
    return rpc("tools/call", {"name": name, "arguments": arguments})


# --- request: [config][chunk seed][flags] METHOD PATH\nheaders\n\nbody
MCP_HEADERS = "accept: application/json, text/event-stream\ncontent-type: application/json"
REQUESTS = [
    ("POST /mcp", MCP_HEADERS, rpc("tools/list", {})),
    ("POST /mcp", MCP_HEADERS, call("tool_search", {"query": "get an issue", "limit": 2})),
    ("POST /mcp", MCP_HEADERS, call("tool_search", {"query": QUERIES[0], "namespace": "other"})),
    ("POST /mcp", MCP_HEADERS, call("github_delete_repo", {"repo": "r"})),
    ("POST /mcp", MCP_HEADERS + "\nmcp-method: tools/call\nmcp-name: echo\nmcp-protocol-version: 2026-07-28",
     rpc("tools/call", {"name": "echo", "arguments": {}, "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}})),
    ("POST /mcp", MCP_HEADERS + "\nmcp-name: =?base64?Z2l0aHViX2dldF9pc3N1ZQ==?=",
     call("github_get_issue", {})),
    ("POST /mcp", MCP_HEADERS, "[" + rpc("tools/list", {}) + "," + call("tool_search", {"query": "x"}) + "]"),
    ("POST /mcp", MCP_HEADERS, json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})),
    ("POST /mcp", MCP_HEADERS, rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}})),
    ("POST /mcp", MCP_HEADERS, call("call_tool", {"name": "echo", "arguments": {"x": 1}})),
    ("POST /mcp", MCP_HEADERS + "\nmcp-protocol-version: 2026-07-28", call("call_tool", {"name": "github_get_issue", "arguments": {}})),
    ("POST /mcp", MCP_HEADERS, call("describe_tool", {"names": ["echo", "github_get_issue"]})),
    ("POST /mcp", MCP_HEADERS, call("list_tool_groups", {})),
    ("POST /mcp", MCP_HEADERS, rpc("tools/list", {"query": "travel in time"})),
    ("POST /mcp", MCP_HEADERS, rpc("tools/list", {"query": "echo", "cursor": "o:1"})),
    ("GET /mcp/search/health", "", ""),
    ("POST /mcp/search", "content-type: application/json", json.dumps({"query": "issue", "limit": 3, "offset": 0})),
    ("POST /tools/search", "content-type: application/json", json.dumps({"query": "echo", "group": "github"})),
    ("POST /%6dcp", MCP_HEADERS, call("github_delete_repo", {})),
    ("POST //MCP/./x/..;a=b", MCP_HEADERS, call("github_delete_repo", {})),
    ("POST /v1/mcp?x=1", MCP_HEADERS, rpc("tools/list", {})),
    ("POST /mcp", MCP_HEADERS + "\ncontent-encoding: gzip", call("echo", {})),
    ("POST /mcp", "content-type: application/json; charset=utf-7", call("echo", {})),
    ("POST /mcp", MCP_HEADERS + "\nx-roles: intern, support", call("github_delete_repo", {})),
    ("POST /mcp", MCP_HEADERS + "\nx-roles: a\nx-roles: support", call("echo", {})),
    ("POST /mcp", MCP_HEADERS + "\nx-jwt-payload: " + base64.urlsafe_b64encode(b'{"scope":"tools:read other","realm_access":{"roles":["x"]}}').decode().rstrip("="),
     call("github_get_issue", {})),
    ("POST /mcp", MCP_HEADERS + "\nx-jwt-payload: !!!", call("echo", {})),
    ("POST /mcp", MCP_HEADERS, '{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"echo"}}'),
    ("POST /mcp", MCP_HEADERS, '\ufeff' + call("echo", {})),
    ("POST /mcp", MCP_HEADERS, '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\\ud800"}}'),
    ("POST /mcp", MCP_HEADERS, "[" * 200 + "]" * 200),
    ("DELETE /mcp", "mcp-session-id: abc", ""),
    ("GET /mcp", "accept: text/event-stream", ""),
]


def request_seeds():
    for i, (line, headers, body) in enumerate(REQUESTS):
        text = line + ("\n" + headers if headers else "") + "\n\n" + body
        for config in range(N_REQUEST_CONFIGS):
            flags = (i + config) % 8
            seed = [0, 7, 70, 150][(i + config) % 4]
            put("request", bytes([config, seed, flags]) + text.encode())
    # A header value that is not UTF-8.
    put("request", bytes([2, 0, 0]) + b"POST /mcp\nx-roles: \xff\xfe\ncontent-type: application/json\n\n" + call("echo", {}).encode())
    put("request", bytes([3, 0, 0]) + b"POST /m\xffcp\n\n" + call("echo", {}).encode())


# --- list: [config][flags][chunk seed] response body
def sse(data, eol="\n"):
    return "event: message" + eol + "data: " + data + eol + eol


def list_result(tools, id_=2, **extra):
    result = {"tools": tools, **extra}
    return {"jsonrpc": "2.0", "id": id_, "result": result}


def list_seeds():
    for body_file in sorted(WIRE.glob("*.03-tools-list.body")):
        body = body_file.read_bytes()
        ct = content_type(body_file.name.replace(".body", ".headers"))
        kind = 1 if ct.startswith("text/event-stream") else 0
        for config, flags, seed in [(0, 0, 0), (1, 32, 9), (4, 36, 80), (5, 32 + 3, 200), (2, 32 + 64, 130)]:
            put("list", bytes([config, (flags & ~3) | kind | (flags & 2), seed]) + body)
    tools = [json.loads(t) for t in TOOLS]
    shapes = [
        list_result(tools[:8]),
        list_result(tools[8:20], nextCursor="abc"),
        list_result(tools[20:24], ttlMs=5000, cacheScope="public", _meta={"k": 1}),
        list_result([{"name": "echo", "inputSchema": {}}, {"name": "echo", "description": "dup"}, {"description": "nameless"}, {"name": 7}, "str", None]),
        list_result([{"name": "github_get_issue", "description": "ß é \u0130 \ud83d\ude00", "inputSchema": {"type": "object", "properties": {"a": {"description": "nested", "type": "object", "properties": {"b": {}}}}}, "annotations": {"readOnlyHint": True}}]),
        list_result({"not": "an array"}),
        {"jsonrpc": "2.0", "id": 2, "result": []},
        {"jsonrpc": "2.0", "id": 2, "error": {"code": -32601, "message": "no"}},
        {"jsonrpc": "2.0", "id": 3, "result": {"tools": tools[:2]}},
        [list_result(tools[:3]), list_result(tools[3:6], id_=3)],
        list_result([]),
    ]
    for i, shape in enumerate(shapes):
        text = json.dumps(shape)
        config = i % N_LIST_CONFIGS
        put("list", bytes([config, 32, 0]) + text.encode())
        put("list", bytes([(config + 3) % N_LIST_CONFIGS, 1 | 4 | 16, 66]) + sse(text, "\r\n").encode())
    put("list", bytes([0, 1, 3]) + (": ping\n\n" + sse('{"jsonrpc":"2.0","method":"notifications/progress"}') + sse(json.dumps(shapes[0]))).encode())
    put("list", bytes([4, 1, 0]) + b"data: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":\n" + b"data: {\"tools\":[]}}\r\r")


# --- sse: [chunk seed] stream
def sse_seeds():
    for body_file in sorted(WIRE.glob("*.body")):
        ct = content_type(body_file.name.replace(".body", ".headers"))
        if ct.startswith("text/event-stream"):
            body = body_file.read_bytes()
            for seed in (0, 5, 100, 200):
                put("sse", bytes([seed]) + body[:4096])
    put("sse", bytes([3]) + b"data: a\rdata: b\r\r: comment\r\nid: 1\r\n\r\nevent: x\ndata\n\ndata:\"notifications/tools/list_changed\"\n\n")
    put("sse", bytes([1]) + b"retry: 10\n\n\r\n\r\r\n\n\ndata: \xff\xfe\n")


# --- config: JSON text
def config_seeds():
    configs = [
        '{"eager_patterns": ["github_get_*"], "search": {"result_format": "summary", "max_allowable_results": 8}}',
        '{"mode": "auto", "search_threshold": 40, "group_separator": "_"}',
        '{"mode": "list"}',
        '{"search": {"score_threshold": 0.3}}',
        '{"mcp_paths":["/mcp"],"hold_request_headers":true,"eager_patterns":["github_get_*"]}',
        '{"search": {"ranking": "hybrid", "embeddings": {"cluster": "embeddings", "model_id": "all-MiniLM-L6-v2", "dimensions": 384, "path": "/v1/embeddings", "timeout": "2s", "query_timeout": "250ms", "circuit_failures": 3, "max_batch_size": 64, "headers": {"authorization": "Bearer x"}}}}',
        '{"search": {"weights": {"name": 2, "description": 1, "input_schema": 0.5}, "http_path": false, "min_cosine": false, "list_query": false, "call_timeout": "1m", "tool_name": "find"}}',
        '{"tools": [{"name": "a", "namespace": "n", "disclosure_mode": "EAGER", "group": "g", "embedding": [1, 0, 0]}], "search": {"ranking": "vector", "embeddings": {"cluster": "e", "model_id": "m", "dimensions": 3}}}',
        '{"catalog": {"fetch": false}}',
        '{"max_body_bytes": 1024, "default_disclosure_mode": "EAGER", "eager_patterns": ["*a*b*", "**", ""]}',
        '',
        '[]',
        '{"search": {"max_allowable_results": 0}}',
    ]
    import re
    text = (HERE / "src" / "format.rs").read_text()
    configs += [m.replace('\\"', '"') for m in re.findall(r'r#"(\{.*?\})"#', text) if '"jsonrpc"' not in m]
    for c in configs:
        put("config", c)


# --- metadata: serialized envoy.config.core.v3.Metadata
def varint(v):
    out = b""
    while True:
        b = v & 0x7F
        v >>= 7
        if v == 0:
            return out + bytes([b])
        out += bytes([b | 0x80])


def ld(field, data):
    return varint(field << 3 | 2) + varint(len(data)) + data


def pb_value(v):
    if v is None:
        return varint(1 << 3) + varint(0)
    if isinstance(v, bool):
        return varint(4 << 3) + varint(int(v))
    if isinstance(v, (int, float)):
        return varint(2 << 3 | 1) + struct.pack("<d", float(v))
    if isinstance(v, str):
        return ld(3, v.encode())
    if isinstance(v, list):
        return ld(6, b"".join(ld(1, pb_value(x)) for x in v))
    return ld(5, pb_struct(v))


def pb_struct(obj):
    return b"".join(ld(1, ld(1, k.encode()) + ld(2, pb_value(v))) for k, v in obj.items())


def metadata(filters):
    return b"".join(ld(1, ld(1, name.encode()) + ld(2, pb_struct(s))) for name, s in filters.items())


def metadata_seeds():
    payloads = [
        {"roles": ["support", "intern"], "scope": "tools:read", "n": 1.5, "ok": True, "none": None},
        {"roles": "support intern", "realm_access": {"roles": ["admin", 3, False]}},
        {"sub": "x", "nested": {"a": {"b": {"c": [[1], {"d": []}]}}}},
    ]
    for p in payloads:
        data = metadata({"envoy.filters.http.jwt_authn": {"jwt_payload": p}, "other": {"k": "v"}})
        put("metadata", data)
        put("metadata", data[: len(data) // 2])
    put("metadata", metadata({"envoy.filters.http.jwt_authn": {"jwt_payload": "not an object"}}))
    put("metadata", b"")
    put("metadata", b"\x0a\xff\xff\xff\xff\x0f")


# --- tokenizer: text
def tokenizer_seeds():
    for t in TOOLS[::10]:
        tool = json.loads(t)
        put("tokenizer", tool["name"] + " " + tool.get("description", ""))
    for q in QUERIES:
        put("tokenizer", q)
    put("tokenizer", "getHTTPResponse v2api s3.putObject ipv4-lookup ΣΑΣ Straße İstanbul ǅemal 𝔘𝔫𝔦 ٣٤ generously agreed")
    put("tokenizer", "ee' y's 'tis sky skies dying lying news inning outing canning herring earring proceed exceed succeed")


# --- embeddings: [status pick | inputs << 3] body
def embeddings_seeds():
    for inputs in range(0, 4):
        data = [{"index": i, "embedding": [1.0, float(i), 0.5]} for i in range(inputs)]
        put("embeddings", bytes([inputs << 3]) + json.dumps({"data": data, "model": "m"}).encode())
        put("embeddings", bytes([inputs << 3 | 1]) + json.dumps({"data": [{"embedding": [0, 0, 1]}] * inputs}).encode())
    put("embeddings", bytes([1 << 3]) + b'{"data":[{"index":0,"embedding":[0,0,0]}]}')
    put("embeddings", bytes([2 << 3]) + b'{"data":[{"index":1,"embedding":[1,2,3]},{"index":1,"embedding":[1,2,3]}]}')
    put("embeddings", bytes([1 << 3]) + b'{"data":[{"index":0,"embedding":[1e39,1,1]}]}')
    put("embeddings", bytes([2]) + b"upstream connect error or disconnect/reset before headers")
    put("embeddings", bytes([3]) + b"")


request_seeds()
list_seeds()
sse_seeds()
config_seeds()
metadata_seeds()
tokenizer_seeds()
embeddings_seeds()
for d in sorted(OUT.iterdir()):
    print(f"{d.name}: {len(list(d.iterdir()))} seeds")
