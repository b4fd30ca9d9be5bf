"""A real MCP server for the Envoy end-to-end tests: the official Python SDK's FastMCP (1.x) or
MCPServer (2.x), whichever the running Python has; Streamable HTTP, stateless, JSON responses.
Every tool run, prompt got and resource read is appended to the file named by --record, one
line "tools/call NAME", "prompts/get NAME" or "resources/read URI", so a test can tell what the
server executed.

    python fastmcp_server.py --port 18777 --record /tmp/calls.txt
"""

import argparse

from importlib.metadata import version

MCP2 = version("mcp").startswith("2.")

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--record", required=True)
parser.add_argument("--sse", action="store_true", help="answer with SSE instead of JSON")
parser.add_argument("--stateful", action="store_true", help="sessions (initialize first)")
parser.add_argument(
    "--page-size", type=int, default=0, help="tools/list pages of this many tools (0: one page)"
)
args = parser.parse_args()

if MCP2:
    # FastMCP became MCPServer in 2.x, which also speaks protocol 2026-07-28; the transport
    # settings moved to run().
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("attack-target")
else:
    from mcp.server.fastmcp import FastMCP

    server = FastMCP(
        "attack-target",
        host="127.0.0.1",
        port=args.port,
        stateless_http=not args.stateful,
        json_response=not args.sse,
    )


def ran(name: str) -> str:
    with open(args.record, "a", encoding="utf-8") as f:
        f.write(f"tools/call {name}\n")
    return f"{name} ran"


@server.tool()
def github_get_issue(number: int = 1) -> str:
    """Get a GitHub issue by number."""
    return ran("github_get_issue")


@server.tool()
def github_list_issues(repo: str = "a/b") -> str:
    """List the issues of a GitHub repository."""
    return ran("github_list_issues")


@server.tool()
def stripe_create_refund(charge: str = "ch_1") -> str:
    """Refund a Stripe charge: returns the money to the customer."""
    return ran("stripe_create_refund")


@server.tool()
def stripe_get_balance() -> str:
    """Get the Stripe account balance."""
    return ran("stripe_get_balance")


@server.tool()
def tool_search(query: str = "") -> str:
    """A tool of the server's own that happens to share the filter's search tool name."""
    return ran("tool_search")


def used(line: str) -> None:
    with open(args.record, "a", encoding="utf-8") as f:
        f.write(line + "\n")


@server.prompt()
def triage_ticket(ticket: str = "1") -> str:
    """Triage a support ticket: classify it by urgency and route it to a team."""
    used("prompts/get triage_ticket")
    return f"Triage support ticket {ticket}: how urgent is it, and which team owns it?"


@server.prompt()
def payroll_summary(month: str = "2026-11") -> str:
    """Summarize the month's payroll for the finance team."""
    used("prompts/get payroll_summary")
    return f"Summarize the payroll of {month}."


@server.resource("kb://refunds", name="refunds", description="How to refund a customer's charge")
def refunds_article() -> str:
    used("resources/read kb://refunds")
    return "Refund a charge from the dashboard within 90 days."


@server.resource("hr://salaries", name="salaries", description="The salary of every employee")
def salaries() -> str:
    used("resources/read hr://salaries")
    return "alice,100\nbob,90"


# Resources on a host of a special scheme (https), which the SDK reads through pydantic's `AnyUrl`
# (WHATWG URL serialization: IDNA, IPv4 forms, default ports): the attack tests read them under
# other spellings of the same URI. FastMCP resolves them as any resource of its own; they are
# left out of resources/list (a server may serve what it does not list), so that the lists the
# other tests expect stay as they are.
UNLISTED = {"https://internal.example.com/payroll.csv", "https://127.0.0.1/admin"}


@server.resource(
    "https://internal.example.com/payroll.csv",
    name="payroll_export",
    description="The payroll export on the internal host",
)
def payroll_export() -> str:
    used("resources/read https://internal.example.com/payroll.csv")
    return "alice,100\nbob,90"


@server.resource("https://127.0.0.1/admin", name="loopback_admin", description="The loopback admin page")
def loopback_admin() -> str:
    used("resources/read https://127.0.0.1/admin")
    return "admin"


_listed = server._resource_manager.list_resources
server._resource_manager.list_resources = lambda: [
    r for r in _listed() if str(r.uri) not in UNLISTED
]


@server.resource("kb://articles/{slug}", name="kb_article", description="A knowledge base article by its slug")
def kb_article(slug: str) -> str:
    used(f"resources/read kb://articles/{slug}")
    return f"Article {slug}"


if args.page_size > 0:
    if MCP2:
        parser.error("--page-size needs mcp 1.x")
    from mcp import types

    # FastMCP lists every tool at once; its low-level server takes a handler that pages, with
    # the offset as the cursor.
    @server._mcp_server.list_tools()
    async def list_tools_paged(request: types.ListToolsRequest) -> types.ListToolsResult:
        tools = await server.list_tools()
        cursor = request.params.cursor if request.params else None
        start = int(cursor) if cursor else 0
        end = start + args.page_size
        return types.ListToolsResult(
            tools=tools[start:end], nextCursor=str(end) if end < len(tools) else None
        )


if MCP2:
    server.run(
        transport="streamable-http",
        host="127.0.0.1",
        port=args.port,
        stateless_http=not args.stateful,
        json_response=not args.sse,
    )
else:
    server.run(transport="streamable-http")
