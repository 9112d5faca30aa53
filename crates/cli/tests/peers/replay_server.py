"""A FastMCP server (the official Python SDK) in two versions, for the replay tests.

Usage: python replay_server.py 1|2

Version 2 differs from version 1 in exactly three calls: `quote` answers another price, `pay` errors,
and `refund` stops erroring. The resource and the prompt are the same in both. They are
replay_demo.py's, which era_replay/modern_server.py serves on the SDK 2.x.
"""

import sys

from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError

from replay_demo import serve_demo

mcp = FastMCP("replay-test-server")
serve_demo(mcp, int(sys.argv[1]), ToolError)


if __name__ == "__main__":
    mcp.run()
