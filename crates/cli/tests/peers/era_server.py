"""An MCPServer of the official Python SDK 2.x for the era tests of `serve` and `shared`.

Usage: python era_server.py dual|modern

`dual` serves as the SDK does over stdio: the first request decides the connection's era (a request
with the 2026-07-28 `_meta` envelope opens a modern connection, `initialize` a legacy one), and the
other era is refused from then on. `modern` serves 2026-07-28 only: `initialize` is refused with
-32022 from the first frame.

Tools: `pid` says which process answered, `echo` returns its argument, `change` says the tools list
changed the way a server of both eras must with the SDK 2.x: it publishes the change to
`subscriptions/listen` subscribers (2026-07-28) and tells the session (the handshake era); the SDK
drops what the connection's era does not carry.
"""

import os
import sys

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.runner import _serve_modern_stream
from mcp.server.stdio import stdio_server

mcp = MCPServer("era-test-server")


@mcp.tool()
def pid() -> str:
    """The server's process id."""
    return str(os.getpid())


@mcp.tool()
def echo(text: str) -> str:
    """Returns its argument."""
    return text


@mcp.tool()
async def change(ctx: Context) -> str:
    """Says the tools list changed, to clients of both eras."""
    await ctx.notify_tools_changed()
    await ctx.session.send_tool_list_changed()
    return "changed"


async def modern_only():
    server = mcp._lowlevel_server
    async with stdio_server() as (read, write):
        async with server.lifespan(server) as state:
            try:
                await _serve_modern_stream(server, read, write, lifespan_state=state, raise_exceptions=False)
            finally:
                await write.aclose()


if __name__ == "__main__":
    if sys.argv[1:] == ["modern"]:
        anyio.run(modern_only)
    elif sys.argv[1:] == ["dual"]:
        mcp.run("stdio")
    else:
        sys.exit("usage: era_server.py dual|modern")
