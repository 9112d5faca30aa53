"""A FastMCP server (the official Python SDK) for the shared-server and serve tests: its `pid` tool says
which process answered, so sessions can tell whether they share one server, and `flood` sends many log
messages, for a client that does not read them."""

import os

from mcp.server.fastmcp import Context, FastMCP

mcp = FastMCP("shared-test-server")


@mcp.tool()
def pid() -> str:
    """The server's process id."""
    return str(os.getpid())


@mcp.tool()
def echo(text: str) -> str:
    """Returns its argument."""
    return text


@mcp.tool()
async def flood(count: int, size: int, ctx: Context) -> str:
    """Sends `count` log messages of `size` bytes each, then says so."""
    data = "x" * size
    for n in range(count):
        await ctx.log("info", data, logger_name=str(n))
    return "flooded"


if __name__ == "__main__":
    mcp.run("stdio")
