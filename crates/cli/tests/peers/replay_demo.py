"""The replay tests' demo, shared by both protocol eras: the tools, resource and prompt of the test
server in its two versions, and the calls the `demo` scenario makes to it.

replay_server.py and replay_client.py run it on the Python SDK 1.x, era_replay/modern_server.py and
era_replay/modern_client.py on the SDK 2.x. The two SDKs register tools, resources and prompts with
the same decorators and call them with the same client methods; what differs (the server class, the
module of `ToolError`, how a result is dumped) is passed in.

Version 2 differs from version 1 in exactly three calls: `quote` answers another price, `pay` errors,
and `refund` stops erroring. The resource and the prompt are the same in both.
"""

# The secret the clients put in `pay`'s arguments; no recording may hold it.
API_KEY = "ak_test_9f8e7d6c5b4a39281706"


def serve_demo(mcp, version, tool_error):
    """Registers the demo's tools, resource and prompt at `version` (1 or 2) on the server `mcp`,
    whose tools fail by raising `tool_error`."""

    @mcp.tool()
    def quote(symbol: str) -> dict:
        """The price of a symbol."""
        return {"symbol": symbol, "price": 12 if version == 1 else 15, "currency": "USD"}

    @mcp.tool()
    def pay(amount: float, apiKey: str = "") -> dict:
        """Pay an amount."""
        if version == 2:
            raise tool_error("card declined")
        return {"status": "paid", "amount": amount}

    @mcp.tool()
    def refund(paymentId: str) -> dict:
        """Refund a payment."""
        if version == 1:
            raise tool_error("refunds are not supported yet")
        return {"status": "refunded", "paymentId": paymentId}

    @mcp.resource("demo://terms")
    def terms() -> str:
        """The terms."""
        return "Quotes are valid for 15 minutes."

    @mcp.prompt()
    def greeting(name: str) -> str:
        """Greet someone."""
        return f"Say hello to {name}."


async def demo(client, dump):
    """The demo's five calls through `client` (a session of the SDK 1.x or a client of the 2.x), each
    result as `dump` makes it JSON."""
    quote = await client.call_tool("quote", {"symbol": "ACME"})
    pay = await client.call_tool("pay", {"amount": 12, "apiKey": API_KEY})
    refund = await client.call_tool("refund", {"paymentId": "pay_1001"})
    terms = await client.read_resource("demo://terms")
    greeting = await client.get_prompt("greeting", {"name": "Ada"})
    return {
        "quote": dump(quote),
        "pay": dump(pay),
        "refund": dump(refund),
        "terms": dump(terms),
        "greeting": dump(greeting),
    }
