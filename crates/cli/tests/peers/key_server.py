"""A FastMCP server (the official Python SDK) that echoes a card token where no name says it is one:
as an object key, and as a tool error's text code. For the tests that a recording, a replay's
reports and an `--update` never hold the token, and that the final gate refuses a line that would.

Usage: python key_server.py

`store(cardToken)` answers `{"cards": {<cardToken>: "stored"}}`; `check(cardToken)` answers a tool
error whose `_meta.code` is the token; `plain()` answers a fixed text. A token that is not one (a
recorded "[REDACTED]" among them) is refused.
"""

from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.types import CallToolResult, TextContent

mcp = FastMCP("key-echo-server")


def _checked(cardToken: str) -> str:
    if not cardToken.startswith("tok_"):
        raise ToolError("card token refused: it is not a card token")
    return cardToken


@mcp.tool()
def store(cardToken: str) -> dict[str, dict[str, str]]:
    """Store a card; the answer lists the stored cards by token."""
    return {"cards": {_checked(cardToken): "stored"}}


@mcp.tool()
def check(cardToken: str) -> CallToolResult:
    """Check a card; a declined card's error code is its token."""
    return CallToolResult.model_validate(
        {
            "isError": True,
            "content": [TextContent(type="text", text="card declined")],
            "_meta": {"code": _checked(cardToken)},
        }
    )


@mcp.tool()
def plain() -> str:
    """Answer a fixed text."""
    return "nothing secret here"


if __name__ == "__main__":
    mcp.run()
