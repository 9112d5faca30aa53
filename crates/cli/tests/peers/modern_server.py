"""A server that speaks only MCP 2026-07-28 (the Python SDK 2.x), over stdio or Streamable HTTP.

    python modern_server.py stdio
    python modern_server.py http PORT

It refuses the handshake era's `initialize` the way the SDK refuses it on a 2026-07-28 connection:
-32022 naming the versions it serves. Tools: `add`, `bump` (changes `memo://note` and says so to
its subscribers), `greet_asked` (asks the client for a name by elicitation, an `input_required`
result), `shout` (logs at info and at warning). A resource `memo://note`, a prompt `review`.
With MODERN_SERVER_LOG set, the method of every request and notification it gets is appended to that
file, one a line.
"""

import os
import sys
import warnings
from typing import Annotated

from pydantic import BaseModel

from mcp.server.mcpserver import Context, Elicit, MCPServer, Resolve
from mcp.shared.exceptions import MCPError
from mcp_types import UNSUPPORTED_PROTOCOL_VERSION

warnings.simplefilter("ignore")

MODERN = "2026-07-28"


async def refuse_handshake(ctx, call_next):
    """The handshake does not exist at 2026-07-28: `initialize` is refused, naming what is served."""
    if log := os.environ.get("MODERN_SERVER_LOG"):
        with open(log, "a") as f:
            f.write(f"{ctx.method}\n")
    if ctx.method == "initialize":
        requested = (ctx.params or {}).get("protocolVersion")
        raise MCPError(
            UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
            {"supported": [MODERN], "requested": str(requested)},
        )
    return await call_next(ctx)


mcp = MCPServer("modern-server", instructions="A server of the stateless era.", middleware=[refuse_handshake])
state = {"note": "first"}


@mcp.tool()
def add(a: int, b: int) -> int:
    """Adds two numbers."""
    return a + b


@mcp.tool()
async def bump(text: str, ctx: Context) -> str:
    """Changes the note."""
    state["note"] = text
    await ctx.notify_resource_updated("memo://note")
    return "bumped"


class Name(BaseModel):
    name: str


async def ask_name() -> Elicit[Name]:
    return Elicit("What is your name?", Name)


@mcp.tool()
async def greet_asked(who: Annotated[Name, Resolve(ask_name)]) -> str:
    """Greets whoever the client names."""
    return f"Hello, {who.name}!"


@mcp.tool()
async def shout(text: str, ctx: Context) -> str:
    """Logs the text at info and at warning."""
    await ctx.info(f"info: {text}")
    await ctx.warning(f"warning: {text}")
    return text.upper()


@mcp.resource("memo://note")
def note() -> str:
    """The note."""
    return state["note"]


@mcp.prompt()
def review(code: str) -> str:
    """Asks for a review."""
    return f"Please review: {code}"


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        mcp.run("stdio")
    else:
        import uvicorn

        app = mcp.streamable_http_app()
        uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
