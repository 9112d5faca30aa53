"""replay_server.py's two versions, served by the Python SDK 2.x in the 2026-07-28 era only: every
request must carry the per-request `_meta`, and `initialize` is refused.

Usage: python modern_server.py 1|2

Run with the SDK 2.x. The tools, resource and prompt are replay_server.py's, answering alike.
"""

import sys

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.runner import _serve_modern_stream
from mcp.server.stdio import stdio_server

VERSION = int(sys.argv[1])
mcp = MCPServer("replay-test-server")


@mcp.tool()
def quote(symbol: str) -> dict:
    """The price of a symbol."""
    return {"symbol": symbol, "price": 12 if VERSION == 1 else 15, "currency": "USD"}


@mcp.tool()
def pay(amount: float, apiKey: str = "") -> dict:
    """Pay an amount."""
    if VERSION == 2:
        raise ToolError("card declined")
    return {"status": "paid", "amount": amount}


@mcp.tool()
def refund(paymentId: str) -> dict:
    """Refund a payment."""
    if VERSION == 1:
        raise ToolError("refunds are not supported yet")
    return {"status": "refunded", "paymentId": paymentId}


@mcp.resource("demo://terms")
def terms() -> str:
    """The terms."""
    return "Quotes are valid for 15 minutes."


@mcp.prompt()
def greeting(name: str) -> str:
    """Greet someone."""
    return f"Say hello to {name}."


async def main():
    server = mcp._lowlevel_server
    async with stdio_server() as (read_stream, write_stream):
        async with server.lifespan(server) as state:
            await _serve_modern_stream(server, read_stream, write_stream, lifespan_state=state, raise_exceptions=False)


if __name__ == "__main__":
    anyio.run(main)
