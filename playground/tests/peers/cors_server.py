"""A real MCP server the playground's page can fetch a catalog from: the official Python SDK's
FastMCP (1.x), Streamable HTTP with sessions, behind CORS that allows any origin and exposes
mcp-session-id (what a server must allow for a browser page to list its tools).

    python cors_server.py --port 18779
"""

import argparse

import uvicorn
from mcp.server.fastmcp import FastMCP
from starlette.middleware.cors import CORSMiddleware

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, required=True)
args = parser.parse_args()

server = FastMCP("playground-peer", host="127.0.0.1", port=args.port)


@server.tool()
def calendar_create_event(title: str, start: str) -> str:
    """Create a calendar event at a start time."""
    return "created"


@server.tool()
def calendar_list_events(day: str) -> str:
    """List the calendar events of a day."""
    return "none"


@server.tool()
def weather_forecast(city: str) -> str:
    """Get the weather forecast for a city."""
    return "sunny"


app = CORSMiddleware(
    server.streamable_http_app(),
    allow_origins=["*"],
    allow_methods=["GET", "POST", "DELETE", "OPTIONS"],
    allow_headers=["*"],
    expose_headers=["mcp-session-id"],
)
uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")
