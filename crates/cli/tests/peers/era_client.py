"""A legacy MCP client (the Python SDK 1.x, the handshake era) driving `calltape bridge ARGS...`.

Usage: python era_client.py BRIDGE_ARGS...

It initializes, lists, calls, reads, gets a prompt, answers an elicitation, subscribes to a resource
and waits for its update, sets the log level, and reads a resource that does not exist. With ERA_TOUCH
set, it then touches that file (the bridge watches it and restarts the server), waits to be told the
tools changed, and calls and reads again. It prints one JSON object of what it received on stdout; the
Rust test asserts on it.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import McpError

TIMEOUT = 60


def dump(value):
    return value.model_dump(mode="json", exclude_none=True, by_alias=True)


async def main():
    updated = asyncio.Event()
    tools_changed = asyncio.Event()
    seen = {"updates": [], "logs": [], "elicitations": []}

    async def on_message(message):
        if isinstance(message, types.ServerNotification):
            root = message.root
            if isinstance(root, types.ResourceUpdatedNotification):
                seen["updates"].append(str(root.params.uri))
                updated.set()
            if isinstance(root, types.ToolListChangedNotification):
                tools_changed.set()

    async def on_log(params):
        seen["logs"].append({"level": params.level, "data": params.data})

    async def on_elicit(context, params):
        seen["elicitations"].append(params.message)
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    server = StdioServerParameters(
        command=os.environ["CALLTAPE_BIN"], args=sys.argv[1:], env=dict(os.environ)
    )
    out = {}
    async with stdio_client(server) as (read, write):
        async with ClientSession(
            read,
            write,
            message_handler=on_message,
            logging_callback=on_log,
            elicitation_callback=on_elicit,
        ) as session:
            init = await session.initialize()
            out["initialize"] = dump(init)
            out["tools"] = sorted(t.name for t in (await session.list_tools()).tools)
            out["add"] = dump(await session.call_tool("add", {"a": 2, "b": 3}))
            out["note"] = dump(await session.read_resource("memo://note"))
            out["prompt"] = dump(await session.get_prompt("review", {"code": "x = 1"}))
            out["greet"] = dump(await session.call_tool("greet_asked", {}))
            await session.subscribe_resource("memo://note")
            out["bump"] = dump(await session.call_tool("bump", {"text": "second"}))
            await asyncio.wait_for(updated.wait(), TIMEOUT)
            out["note_after"] = dump(await session.read_resource("memo://note"))
            await session.set_logging_level("warning")
            out["shout"] = dump(await session.call_tool("shout", {"text": "hi"}))
            try:
                await session.read_resource("memo://gone")
                out["gone"] = "read"
            except McpError as e:
                out["gone"] = {"code": e.error.code, "message": e.error.message}
            out["ping"] = dump(await session.send_ping())
            if touch := os.environ.get("ERA_TOUCH"):
                tools_changed.clear()
                with open(touch, "a") as f:
                    f.write("change\n")
                await asyncio.wait_for(tools_changed.wait(), TIMEOUT)
                out["add_after_restart"] = dump(await session.call_tool("add", {"a": 1, "b": 1}))
                out["note_after_restart"] = dump(await session.read_resource("memo://note"))
    out.update(seen)
    print(json.dumps(out))


asyncio.run(asyncio.wait_for(main(), TIMEOUT * 2))
