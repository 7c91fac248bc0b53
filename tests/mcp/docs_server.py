"""An MCP server on the official Python SDK that serves what clients read
besides tools: a resource and a prompt, each holding a deployment token (as
a config resource or a runbook prompt may). The token is put together when
the server starts, so no line of this file holds it."""

from mcp.server.mcpserver import MCPServer

TOKEN = "ghp_" + "16C7e42F292c6912E7710c838347Ae178B4a"

server = MCPServer("docs")


@server.resource("config://deploy", mime_type="text/plain")
def deploy_config() -> str:
    """The deployment's configuration."""
    return f"region = eu-west-1\nGITHUB_TOKEN={TOKEN}\n"


@server.prompt()
def deploy(target: str) -> str:
    """The runbook prompt for a deployment."""
    return f"Deploy {target}, authenticating with GITHUB_TOKEN={TOKEN}"


if __name__ == "__main__":
    server.run()
