"""An MCP client of the 2026-07-28 era (the Python SDK 2.x, its version pinned, so it never sends
`initialize`) that makes a scripted set of calls through `calltape record`.

Usage: python modern_client.py SCENARIO -- COMMAND...

SCENARIO is `demo` (replay_client.py's `demo` calls, against modern_server.py here) or `asked` (the
`greet_asked` tool of the peers' modern_server.py, whose `input_required` result asks for a name,
answered "Ada", then `add`). Prints one JSON object with what the client received.
"""

import asyncio
import json
import os
import sys

import mcp_types as types
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

API_KEY = "ak_test_9f8e7d6c5b4a39281706"


def dump(value):
    return value.model_dump(mode="json", by_alias=True, exclude_none=True)


async def demo(client):
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


async def asked(client):
    greet = await client.call_tool("greet_asked", {})
    total = await client.call_tool("add", {"a": 2, "b": 3})
    return {"greet": dump(greet), "add": dump(total)}


async def main(scenario, command):
    asked_for = []

    async def on_elicit(context, params):
        asked_for.append(params.message)
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    server = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    async with Client(server, mode="2026-07-28", elicitation_callback=on_elicit) as client:
        out = await {"demo": demo, "asked": asked}[scenario](client)
    out["asked"] = asked_for
    return out


if __name__ == "__main__":
    split = sys.argv.index("--")
    print(json.dumps(asyncio.run(asyncio.wait_for(main(sys.argv[1], sys.argv[split + 1 :]), 60))))
