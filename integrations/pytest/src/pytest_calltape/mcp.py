"""The `mcp_server` fixture: an MCP server for a test that answers from the test's own recording,
`calltape mock` on stdio, recorded from the real server in auto mode on the first run."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

# What `calltape mock` reads to choose its mode when no --calltape-mode is given; an MCP client
# starts its server with an environment of its own, so the mock is handed them on its command line.
_MODE_VARIABLES = ("CALLTAPE_MODE", "LLM_TEST_MODE", "UPDATE_RECORDINGS", "RECORD_LLM", "CI")


class McpServer:
    """What the `mcp_server` fixture gives a test: the command of a stdio MCP server (`command`,
    or `params` for the Python SDK's `stdio_client`) that answers from the test's recording."""

    def __init__(self, binary: str, recording: Path, mode: str | None, upstream, log: Path):
        self.recording = recording
        self._log = log
        mock = [binary, "mock", str(recording)]
        if mode:
            mock += ["--mode", mode]
        if isinstance(upstream, str):
            mock += ["--url", upstream]
        elif upstream:
            mock += ["--", *[str(word) for word in upstream]]
        given = [f"{name}={os.environ[name]}" for name in _MODE_VARIABLES if name in os.environ]
        # The mock's stderr goes to a file of the test's, read when the test ends.
        self.command = ["sh", "-c", 'log="$1"; shift; exec env "$@" 2>>"$log"', "sh", str(log), *given, *mock]

    @property
    def params(self):
        """`mcp.StdioServerParameters` for the command, as the Python SDK's `stdio_client` takes them."""
        from mcp import StdioServerParameters

        return StdioServerParameters(command=self.command[0], args=self.command[1:])

    def misses(self) -> list[str]:
        """What the mock said of the requests its recording held no answer for, once it has exited:
        its summary line and one line per miss, each naming the closest recorded call."""
        try:
            text = self._log.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return []
        lines = text.splitlines()
        return [
            line
            for line in lines
            if line.startswith("  miss: ") or (line.startswith("calltape mock") and " missed" in line and not line.endswith(" 0 missed"))
        ]


def new_log() -> Path:
    """A file for one mock's stderr."""
    handle, name = tempfile.mkstemp(prefix="pytest-calltape-mcp-", suffix=".log")
    os.close(handle)
    return Path(name)
