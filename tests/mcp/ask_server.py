"""An MCP server on the official Python SDK whose tool asks the user before
it runs: `deploy(target)` needs an approval code. On 2026-07-28 the question
is an `input_required` result and the answer comes in the client's retry
(`inputResponses`); in the handshake era it is an elicitation request. The
codes it gets are appended to the file named by its argument, if any."""

import sys
from typing import Annotated

from pydantic import BaseModel

from mcp.server.mcpserver import Elicit, MCPServer, Resolve


class Approval(BaseModel):
    code: str


def ask_for_approval(target: str) -> Elicit[Approval]:
    return Elicit(f"Approval code to deploy {target}?", Approval)


server = MCPServer("ask")


@server.tool()
def deploy(target: str, approval: Annotated[Approval, Resolve(ask_for_approval)]) -> str:
    """Deploys `target` once the user gives an approval code."""
    if len(sys.argv) > 1:
        with open(sys.argv[1], "a") as f:
            f.write(approval.code + "\n")
    return f"deployed {target} with code {approval.code}"


if __name__ == "__main__":
    server.run()
