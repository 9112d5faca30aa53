"""replay_server.py's two versions, served by the Python SDK 2.x in the 2026-07-28 era only: every
request must carry the per-request `_meta`, and `initialize` is refused.

Usage: python modern_server.py 1|2

Run with the SDK 2.x. The tools, resource and prompt are replay_server.py's (replay_demo.py's, one
folder up), answering alike.
"""

import os
import sys

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.runner import _serve_modern_stream
from mcp.server.stdio import stdio_server

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from replay_demo import serve_demo  # noqa: E402 (found through the path above)

mcp = MCPServer("replay-test-server")
serve_demo(mcp, int(sys.argv[1]), ToolError)


async def main():
    server = mcp._lowlevel_server
    async with stdio_server() as (read_stream, write_stream):
        async with server.lifespan(server) as state:
            await _serve_modern_stream(server, read_stream, write_stream, lifespan_state=state, raise_exceptions=False)


if __name__ == "__main__":
    anyio.run(main)
