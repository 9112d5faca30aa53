"""A handshake-era client (the Python SDK 1.x) for the conformance suite's client scenarios, through calltape.

Usage: python conformance_client.py URL   (the suite appends the URL of the server it started)

The client speaks stdio to `calltape bridge --url URL` (the binary named by $CALLTAPE_BIN), which talks to
the suite's 2026-07-28 server. It makes every call the `http-standard-headers` scenario checks the
headers of: tools, resources and prompts, listed and each one called, read or got.
"""

import asyncio
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main(url: str) -> None:
    bridge = StdioServerParameters(
        command=os.environ["CALLTAPE_BIN"],
        args=["bridge", "--url", url],
        env={**os.environ, "NO_COLOR": "1"},
    )
    async with stdio_client(bridge) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = await session.list_tools()
        for tool in tools.tools:
            await session.call_tool(tool.name, {})
        resources = await session.list_resources()
        for resource in resources.resources:
            await session.read_resource(resource.uri)
        prompts = await session.list_prompts()
        for prompt in prompts.prompts:
            await session.get_prompt(prompt.name)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[-1]))
