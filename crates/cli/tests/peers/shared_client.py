"""MCP clients (the official Python SDK) that run `calltape shared` as their stdio server.

Usage: python shared_client.py N -- COMMAND...

Starts N clients together, each asks the `pid` tool which process answered, then, once they all
closed, one more client does the same. Prints {"pids": [...], "later": "..."} on stdout.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

TIMEOUT = 60


async def one(command):
    params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("pid", {})
            echo = await session.call_tool("echo", {"text": "shared"})
            assert echo.content[0].text == "shared", echo
            return result.content[0].text


async def main():
    count = int(sys.argv[1])
    command = sys.argv[sys.argv.index("--") + 1 :]
    pids = await asyncio.wait_for(asyncio.gather(*(one(command) for _ in range(count))), TIMEOUT)
    later = await asyncio.wait_for(one(command), TIMEOUT)
    print(json.dumps({"pids": list(pids), "later": later}))


if __name__ == "__main__":
    asyncio.run(main())
