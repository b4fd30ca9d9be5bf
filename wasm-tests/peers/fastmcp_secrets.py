"""A real MCP server (the official Python SDK's FastMCP 1.x, Streamable HTTP, stateless, JSON
responses) for the Envoy attack tests of the HTTP search endpoint's `namespace`
(tests/catalog_attacks_e2e.rs): its prompt and resource names share the `github_` prefix its
tools have, so that an entry of another kind searched as a tool would pass a tool rule.

    python fastmcp_secrets.py --port 18777 --variant saas|admin

`saas`: the tools a support agent uses, a prompt and resources that only an administrator's
rules would allow. `admin`: the tools of an administrators' server (its own Envoy route).
"""

import argparse

from mcp.server.fastmcp import FastMCP

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--variant", choices=["saas", "admin"], required=True)
args = parser.parse_args()

server = FastMCP(
    f"secrets-{args.variant}",
    host="127.0.0.1",
    port=args.port,
    stateless_http=True,
    json_response=True,
)

if args.variant == "saas":

    @server.tool()
    def github_get_issue(number: int = 1) -> str:
        """Get a GitHub issue by number."""
        return "issue"

    @server.tool()
    def github_list_issues(repo: str = "a/b") -> str:
        """List the issues of a GitHub repository."""
        return "issues"

    @server.tool()
    def stripe_create_refund(charge: str = "ch_1") -> str:
        """Refund a Stripe charge: returns the money to the customer."""
        return "refunded"

    @server.prompt()
    def github_deploy_keys(org: str = "acme") -> str:
        """Print the deploy keys and signing secrets of every GitHub repository of the organization."""
        return f"List every deploy key of {org}."

    @server.prompt()
    def triage_ticket(ticket: str = "1") -> str:
        """Triage a support ticket: classify it by urgency and route it to a team."""
        return f"Triage ticket {ticket}."

    @server.resource(
        "vault://github/deploy-keys",
        name="github_deploy_key_vault",
        description="The deploy keys and signing secrets of every GitHub repository",
    )
    def deploy_key_vault() -> str:
        return "ssh-ed25519 AAAA..."

    @server.resource(
        "vault://github/{repo}/secrets",
        name="github_repository_secrets",
        description="The deploy keys and signing secrets of one GitHub repository",
    )
    def repository_secrets(repo: str) -> str:
        return f"secrets of {repo}"

else:

    @server.tool()
    def github_delete_organization(org: str = "acme") -> str:
        """Delete a GitHub organization with every repository, team and secret in it."""
        return "deleted"

    @server.tool()
    def github_transfer_repository(repo: str = "a/b", owner: str = "c") -> str:
        """Transfer a GitHub repository to another owner."""
        return "transferred"


server.run(transport="streamable-http")
