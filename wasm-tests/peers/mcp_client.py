"""A real MCP client for the Envoy end-to-end tests: the official Python SDK (1.x or 2.x, whichever
the running Python has), Streamable HTTP. It does what an agent does with a filtered server and
prints what it saw as one JSON object on stdout, for the test to judge:

1. lists the tools, following nextCursor page by page;
2. calls the search tool with --query (and --limit), then again with the next offset;
3. calls the first tool the first search found (or the one at --call-rank), by name, with
   --arguments;
4. runs each of --extra-queries as one more search, then calls each of --direct-calls by name.

    python mcp_client.py --url http://127.0.0.1:10000/mcp --query "refund a charge"

No assertion is made here: the test reads the report.
"""

import argparse
import asyncio
import json
import sys
from importlib.metadata import version

parser = argparse.ArgumentParser()
parser.add_argument("--url", required=True)
parser.add_argument("--query", required=True)
parser.add_argument("--limit", type=int, default=1)
parser.add_argument("--search-tool", default="tool_search")
parser.add_argument("--arguments", default="{}", help="JSON arguments of the call")
parser.add_argument(
    "--mode", default="auto", help="2.x only: protocol negotiation ('auto', 'legacy' or a version)"
)
parser.add_argument(
    "--protocol", help="1.x only: the protocol version to ask for (default: the SDK's latest)"
)
parser.add_argument(
    "--search-arguments", default="{}", help="JSON: more arguments of each search (detail, max_tokens)"
)
parser.add_argument("--call-rank", type=int, default=1, help="which result of the first search to call")
parser.add_argument("--extra-queries", default="[]", help="JSON: more searches, after the call")
parser.add_argument("--direct-calls", default="[]", help="JSON: tools called by name at the end")
args = parser.parse_args()

SDK = version("mcp")
MAJOR = int(SDK.split(".")[0])


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def texts(result):
    return [c.text for c in result.content if getattr(c, "type", None) == "text"]


async def flow(list_tools, call_tool, report):
    pages, cursor = [], None
    while True:
        page = await list_tools(cursor)
        pages.append([dump(t) for t in page.tools])
        cursor = page.nextCursor if MAJOR < 2 else page.next_cursor
        if cursor is None or len(pages) > 20:
            break
    report["pages"] = pages

    listed = [t for page in pages for t in page if t.get("name") == args.search_tool]
    output_schema = listed[0].get("outputSchema") if listed else None
    searches = []
    for offset in (0, args.limit):
        arguments = {"query": args.query, "limit": args.limit, "offset": offset}
        result = await call_tool(args.search_tool, arguments | json.loads(args.search_arguments))
        search = dump(result) | {"texts": texts(result)}
        if output_schema is not None:
            # The SDK validates too (2.x); checked here as well, so that the report says so.
            import jsonschema

            jsonschema.validate(search.get("structuredContent"), output_schema)
            search["validated"] = True
        searches.append(search)
    report["searches"] = searches

    first = searches[0]["texts"]
    found = json.loads(first[0]) if first and first[0].startswith("[") else []
    structured = searches[0].get("structuredContent")
    if not found and structured:
        found = [{"name": r["name"]} for r in structured["results"]]
    report["found"] = [t.get("name") for t in found]
    if len(found) >= args.call_rank:
        name = found[args.call_rank - 1]["name"]
        result = await call_tool(name, json.loads(args.arguments))
        report["call"] = dump(result) | {"name": name, "texts": texts(result)}
    extra = []
    for query in json.loads(args.extra_queries):
        result = await call_tool(args.search_tool, {"query": query})
        extra.append(dump(result) | {"texts": texts(result)})
    report["extra_searches"] = extra
    direct = []
    for name in json.loads(args.direct_calls):
        result = await call_tool(name, {})
        direct.append(dump(result) | {"name": name, "texts": texts(result)})
    report["direct_calls"] = direct


async def main():
    report = {"sdk": SDK}
    if MAJOR < 2:
        from mcp import ClientSession, types

        if args.protocol:
            # What a client of that protocol's era sends in `initialize` (the SDK reads the
            # constant when it sends it).
            types.LATEST_PROTOCOL_VERSION = args.protocol
        from mcp.client.streamable_http import streamablehttp_client

        async with streamablehttp_client(args.url) as (read, write, _):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                report["protocol"] = init.protocolVersion
                report["server"] = init.serverInfo.name

                async def list_tools(cursor):
                    return await session.list_tools(cursor=cursor)

                await flow(list_tools, session.call_tool, report)
    else:
        from mcp import Client

        # No response cache: every list must reach Envoy, as the test counts on.
        async with Client(args.url, mode=args.mode, cache=None) as client:
            report["protocol"] = client.protocol_version
            info = client.server_info
            report["server"] = info.name if info else None

            async def list_tools(cursor):
                return await client.list_tools(cursor=cursor)

            await flow(list_tools, client.call_tool, report)
    json.dump(report, sys.stdout)


asyncio.run(main())
