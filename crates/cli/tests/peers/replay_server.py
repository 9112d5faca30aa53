"""A FastMCP server (the official Python SDK) in two versions, for the replay tests.

Usage: python replay_server.py 1|2

Version 2 differs from version 1 in exactly three calls: `quote` answers another price, `pay` errors,
and `refund` stops erroring. The resource and the prompt are the same in both.
"""

import sys

from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError

VERSION = int(sys.argv[1])
mcp = FastMCP("replay-test-server")


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


if __name__ == "__main__":
    mcp.run()
