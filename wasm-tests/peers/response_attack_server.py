"""A real MCP server for the response-side attack tests (wasm-tests/tests/response_attacks_e2e.rs):
the official Python SDK's FastMCP (1.x) or MCPServer (2.x), whichever the running Python has,
over Streamable HTTP, with the tools, prompts and resources of fastmcp_server.py plus a resource
template the test policy forbids.

What it adds for the attacks:
  --record FILE     every HTTP request that reaches the server, one JSON line each
                    ({"http": "POST", "last_event_id": ..., "body": "..."}), written before the
                    SDK sees it: a test proves a refused request never arrived.
  --event-store     an in-memory event store (the SDK's EventStore interface, 1.x and 2.x), so
                    a GET with Last-Event-ID replays a stream's events ("Resumability and
                    Redelivery", Streamable HTTP 2025-11-25). Each stored event is also written
                    to --events FILE, one JSON line {"event_id", "stream_id", "message"}.
  --list-delay S    tools/list, prompts/list, resources/list and resources/templates/list answer
  --ping-delay S    (resp. ping) after S seconds (1.x): the SDK routes a response to the HTTP
                    stream registered under str(id), last registration wins, so a list with id 1
                    answered while a ping with id "1" is in flight lands on the ping's stream.
                    The delays make that ordering certain instead of a race.

    python response_attack_server.py --port 18777 --record /tmp/requests.jsonl --stateful --sse \
        --event-store --events /tmp/events.jsonl
"""

import argparse
import json
import uuid

from importlib.metadata import version

import anyio
import uvicorn

MCP2 = version("mcp").startswith("2.")

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--record", required=True)
parser.add_argument("--sse", action="store_true", help="answer with SSE instead of JSON")
parser.add_argument("--stateful", action="store_true", help="sessions (initialize first)")
parser.add_argument("--event-store", action="store_true", help="resumable SSE streams")
parser.add_argument("--events", help="where the event store writes the events it stores")
parser.add_argument("--list-delay", type=float, default=0.0)
parser.add_argument("--ping-delay", type=float, default=0.0)
args = parser.parse_args()

if MCP2:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.streamable_http import EventMessage, EventStore

    server = MCPServer("response-attack-target")
else:
    from mcp.server.fastmcp import FastMCP
    from mcp.server.streamable_http import EventMessage, EventStore


class MemoryEventStore(EventStore):
    """Every event in memory; a replay sends the events of the cursor's stream after it."""

    def __init__(self, log_path):
        self.events = []
        self.log_path = log_path

    async def store_event(self, stream_id, message):
        event_id = uuid.uuid4().hex
        self.events.append((event_id, stream_id, message))
        if self.log_path:
            dumped = (
                None if message is None else message.model_dump(by_alias=True, exclude_none=True)
            )
            with open(self.log_path, "a", encoding="utf-8") as f:
                f.write(
                    json.dumps({"event_id": event_id, "stream_id": stream_id, "message": dumped})
                    + "\n"
                )
        return event_id

    async def replay_events_after(self, last_event_id, send_callback):
        start = next((i for i, e in enumerate(self.events) if e[0] == last_event_id), None)
        if start is None:
            return None
        stream_id = self.events[start][1]
        for event_id, sid, message in self.events[start + 1 :]:
            if sid == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream_id


event_store = MemoryEventStore(args.events) if args.event_store else None

if not MCP2:
    server = FastMCP(
        "response-attack-target",
        host="127.0.0.1",
        port=args.port,
        stateless_http=not args.stateful,
        json_response=not args.sse,
        event_store=event_store,
    )


@server.tool()
def github_get_issue(number: int = 1) -> str:
    """Get a GitHub issue by number."""
    return "github_get_issue ran"


@server.tool()
def github_list_issues(repo: str = "a/b") -> str:
    """List the issues of a GitHub repository."""
    return "github_list_issues ran"


@server.tool()
def stripe_create_refund(charge: str = "ch_1") -> str:
    """Refund a Stripe charge: returns the money to the customer."""
    return "stripe_create_refund ran"


@server.tool()
def stripe_get_balance() -> str:
    """Get the Stripe account balance."""
    return "stripe_get_balance ran"


@server.prompt()
def triage_ticket(ticket: str = "1") -> str:
    """Triage a support ticket: classify it by urgency and route it to a team."""
    return f"Triage support ticket {ticket}."


@server.prompt()
def payroll_summary(month: str = "2026-11") -> str:
    """Summarize the month's payroll for the finance team."""
    return f"Summarize the payroll of {month}."


@server.resource("kb://refunds", name="refunds", description="How to refund a customer's charge")
def refunds_article() -> str:
    return "Refund a charge from the dashboard within 90 days."


@server.resource("hr://salaries", name="salaries", description="The salary of every employee")
def salaries() -> str:
    return "alice,100\nbob,90"


@server.resource(
    "kb://articles/{slug}", name="kb_article", description="A knowledge base article by its slug"
)
def kb_article(slug: str) -> str:
    return f"Article {slug}"


@server.resource(
    "hr://employees/{employee}", name="employee_file", description="An employee's personnel file"
)
def employee_file(employee: str) -> str:
    return f"The file of {employee}"


if args.list_delay > 0 or args.ping_delay > 0:
    if MCP2:
        parser.error("--list-delay and --ping-delay need mcp 1.x")
    from mcp import types

    handlers = server._mcp_server.request_handlers

    def delayed(kind, seconds):
        inner = handlers[kind]

        async def handler(request):
            await anyio.sleep(seconds)
            return await inner(request)

        handlers[kind] = handler

    if args.list_delay > 0:
        for kind in (
            types.ListToolsRequest,
            types.ListPromptsRequest,
            types.ListResourcesRequest,
            types.ListResourceTemplatesRequest,
        ):
            delayed(kind, args.list_delay)
    if args.ping_delay > 0:
        delayed(types.PingRequest, args.ping_delay)


def recording(app, path):
    """Writes each HTTP request (method, Last-Event-ID, body) before the app reads it."""

    async def wrapped(scope, receive, send):
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        chunks = []
        first = None
        while True:
            message = await receive()
            if message["type"] != "http.request":
                first = message
                break
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        line = {
            "http": scope["method"],
            "last_event_id": headers.get("last-event-id"),
            "body": body.decode("utf-8", "backslashreplace"),
        }
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")
        replayed = False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                if first is not None:
                    return first
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await app(scope, replay, send)

    return wrapped


if MCP2:
    app = server.streamable_http_app(
        json_response=not args.sse,
        stateless_http=not args.stateful,
        event_store=event_store,
        host="127.0.0.1",
    )
else:
    app = server.streamable_http_app()

uvicorn.run(recording(app, args.record), host="127.0.0.1", port=args.port, log_level="warning")
