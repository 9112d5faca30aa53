"""A FastMCP server (the official Python SDK) for the shared-server tests: its `pid` tool says which
process answered, so sessions can tell whether they share one server."""

import os

from mcp.server.fastmcp import FastMCP

mcp = FastMCP("shared-test-server")


@mcp.tool()
def pid() -> str:
    """The server's process id."""
    return str(os.getpid())


@mcp.tool()
def echo(text: str) -> str:
    """Returns its argument."""
    return text


if __name__ == "__main__":
    mcp.run("stdio")
