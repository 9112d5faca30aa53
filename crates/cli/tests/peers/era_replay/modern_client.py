"""An MCP client of the 2026-07-28 era (the Python SDK 2.x, its version pinned, so it never sends
`initialize`) that makes a scripted set of calls through `calltape record`.

Usage: python modern_client.py SCENARIO -- COMMAND...

SCENARIO is `demo` (replay_demo.py's calls, one folder up, as replay_client.py makes them, against
modern_server.py here), `asked` (the `greet_asked` tool of the peers' modern_server.py, whose
`input_required` result asks for a name, answered "Ada", then `add`) or `everything` (server-everything's
`trigger-sampling-request` and `trigger-elicitation-request`, through the bridge's translation of
its requests into `input_required`). Prints one JSON object with what the client received.
"""

import asyncio
import json
import os
import sys

import mcp_types as types
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import replay_demo  # noqa: E402 (found through the path above)


def dump(value):
    return value.model_dump(mode="json", by_alias=True, exclude_none=True)


async def demo(client):
    return await replay_demo.demo(client, dump)


async def asked(client):
    greet = await client.call_tool("greet_asked", {})
    total = await client.call_tool("add", {"a": 2, "b": 3})
    return {"greet": dump(greet), "add": dump(total)}


async def everything(client):
    sampled = await client.call_tool("trigger-sampling-request", {"prompt": "tides", "maxTokens": 40})
    elicited = await client.call_tool("trigger-elicitation-request", {})
    return {"sampled": dump(sampled), "elicited": dump(elicited)}


async def main(scenario, command):
    asked_for = []

    async def on_elicit(context, params):
        asked_for.append(params.message)
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    async def on_sample(context, params):
        asked_for.append("sampling")
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="a sampled answer about tides"),
            model="test-model",
        )

    server = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    async with Client(
        server, mode="2026-07-28", elicitation_callback=on_elicit, sampling_callback=on_sample
    ) as client:
        out = await {"demo": demo, "asked": asked, "everything": everything}[scenario](client)
    out["asked"] = asked_for
    return out


if __name__ == "__main__":
    split = sys.argv.index("--")
    print(json.dumps(asyncio.run(asyncio.wait_for(main(sys.argv[1], sys.argv[split + 1 :]), 60))))
