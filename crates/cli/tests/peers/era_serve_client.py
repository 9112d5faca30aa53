"""An MCP client of either protocol era (the official Python SDK) for the era tests of `serve` and
`shared`.

Usage: python era_serve_client.py legacy|modern URL STEP...
       python era_serve_client.py legacy|modern -- COMMAND... (a stdio server; the steps come from ERA_STEPS)

`legacy` runs with the SDK 1.x (the initialize handshake); `modern` with the SDK 2.x pinned to
2026-07-28 (no handshake: every request carries its own envelope). Each STEP is `NAME` or
`NAME=JSON`: a tool called with those arguments, whose first text is kept; `listen` (modern only)
opens a `subscriptions/listen` stream for tool list changes, calls the `change` tool and waits for
the change to arrive; `changed` (legacy only) calls the `change` tool and waits for the session's
`notifications/tools/list_changed`. Prints {"steps": [...]} on stdout: one text (or
"tools_list_changed") per step.
"""

import asyncio
import json
import os
import sys

TIMEOUT = 60


def parse_step(step):
    name, _, args = step.partition("=")
    return name, json.loads(args) if args else {}


async def run_legacy(target, steps):
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamablehttp_client

    from mcp import types

    changed = asyncio.Event()

    async def on_message(message):
        if isinstance(message, types.ServerNotification) and isinstance(
            message.root, types.ToolListChangedNotification
        ):
            changed.set()

    async def session_steps(read, write):
        async with ClientSession(read, write, message_handler=on_message) as session:
            await session.initialize()
            out = []
            for step in steps:
                if step == "changed":
                    changed.clear()
                    await session.call_tool("change", {})
                    await changed.wait()
                    out.append("tools_list_changed")
                    continue
                name, args = parse_step(step)
                result = await session.call_tool(name, args)
                assert not result.isError, result
                out.append(result.content[0].text)
            return out

    if isinstance(target, str):
        async with streamablehttp_client(target) as (read, write, _):
            return await session_steps(read, write)
    params = StdioServerParameters(command=target[0], args=target[1:], env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        return await session_steps(read, write)


async def run_modern(target, steps):
    from mcp import Client, StdioServerParameters

    if not isinstance(target, str):
        target = StdioServerParameters(command=target[0], args=target[1:], env=dict(os.environ))
    out = []
    async with Client(target, mode="2026-07-28") as client:
        for step in steps:
            if step == "listen":
                async with client.listen(tools_list_changed=True) as sub:
                    await client.call_tool("change", {})
                    event = await sub.__anext__()
                    out.append("tools_list_changed" if type(event).__name__ == "ToolsListChanged" else repr(event))
                continue
            name, args = parse_step(step)
            result = await client.call_tool(name, args)
            assert not result.is_error, result
            out.append(result.content[0].text)
    return out


async def main():
    era = sys.argv[1]
    if sys.argv[2] == "--":
        target = sys.argv[3:]
        steps = [s for s in os.environ.get("ERA_STEPS", "").split(" ") if s]
    else:
        target = sys.argv[2]
        steps = sys.argv[3:]
    run = {"legacy": run_legacy, "modern": run_modern}[era]
    out = await asyncio.wait_for(run(target, steps), TIMEOUT)
    print(json.dumps({"steps": out}))


if __name__ == "__main__":
    asyncio.run(main())
