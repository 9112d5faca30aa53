"""An MCP client (the official Python SDK) that calls key_server.py's tools with the card token in
$CARD, through the stdio command it is given (for the tests: `calltape record -o FILE -- python
key_server.py`). Prints one JSON object with what it received.

Usage: python key_client.py [--client-key KEY] -- COMMAND...

With --client-key, the client's info carries KEY as an extra member's name, as a client that puts
a token where no rule looks would.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import Implementation


async def main(command, client_key):
    server = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    info = {"name": "key-client", "version": "1.0"}
    if client_key:
        info[client_key] = True
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write, client_info=Implementation.model_validate(info)) as session:
            await session.initialize()
            card = os.environ["CARD"]
            stored = await session.call_tool("store", {"cardToken": card})
            checked = await session.call_tool("check", {"cardToken": card})
            plain = await session.call_tool("plain", {})
            return {
                "stored": stored.model_dump(mode="json", exclude_none=True),
                "checked": checked.model_dump(mode="json", exclude_none=True, by_alias=True),
                "plain": plain.model_dump(mode="json", exclude_none=True),
            }


if __name__ == "__main__":
    args = sys.argv[1:]
    client_key = None
    if args[:1] == ["--client-key"]:
        client_key, args = args[1], args[2:]
    if args[:1] == ["--"]:
        args = args[1:]
    print(json.dumps(asyncio.run(main(args, client_key))))
