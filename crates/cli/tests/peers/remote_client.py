"""A Streamable HTTP client of the official Python SDK that sends its own bearer token, for the
`serve --url` tests.

Usage: python remote_client.py legacy|modern URL

The token comes from CLIENT_TOKEN (none when unset or empty), never argv. `legacy` runs with the SDK
1.x (initialize handshake, a session, its GET stream); `modern` with the SDK 2.x pinned to
2026-07-28. Lists the tools and calls `echo`, then prints on stdout
{"tools": [names], "echo": text} or, when a request fails, {"error": text}.
"""

import asyncio
import json
import os
import sys

TIMEOUT = 60


def headers():
    token = os.environ.get("CLIENT_TOKEN")
    return {"Authorization": f"Bearer {token}"} if token else {}


async def run_legacy(url):
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    async with streamablehttp_client(url, headers=headers()) as (read, write, _):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            echo = await session.call_tool("echo", {"message": "hello from python"})
            return {"tools": [t.name for t in tools.tools], "echo": echo.content[0].text}


async def run_modern(url):
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    transport = streamable_http_client(url, http_client=create_mcp_http_client(headers=headers()))
    async with Client(transport, mode="2026-07-28") as client:
        tools = await client.list_tools()
        echo = await client.call_tool("echo", {"message": "hello from python 2"})
        return {"tools": [t.name for t in tools.tools], "echo": echo.content[0].text}


async def main():
    era, url = sys.argv[1], sys.argv[2]
    run = run_legacy if era == "legacy" else run_modern
    try:
        out = await asyncio.wait_for(run(url), TIMEOUT)
    except BaseException as e:  # an ExceptionGroup from the SDK's task group included
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        out = {"error": repr(e)}
    print(json.dumps(out), flush=True)


asyncio.run(main())
