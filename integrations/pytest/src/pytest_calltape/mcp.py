"""The `mcp_server` and `mcp_server_url` fixtures: an MCP server for a test that answers from the
test's own recording, `calltape mock` on stdio or `calltape serve --mock` over Streamable HTTP,
recorded from the real server in auto mode on the first run."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path
from urllib.parse import quote

# What `calltape mock` reads to choose its mode when no --calltape-mode is given; an MCP client
# starts its server with an environment of its own, so the mock is handed them on its command line.
_MODE_VARIABLES = ("CALLTAPE_MODE", "LLM_TEST_MODE", "UPDATE_RECORDINGS", "RECORD_LLM", "CI")


class McpServer:
    """What the `mcp_server` fixture gives a test: the command of a stdio MCP server (`command`,
    or `params` for the Python SDK's `stdio_client`) that answers from the test's recording."""

    def __init__(self, binary: str, recording: Path, mode: str | None, upstream, log: Path):
        self.recording = recording
        self._log = log
        mock = [binary, "mock", str(recording), *_mode_and_server(mode, upstream)]
        given = [f"{name}={os.environ[name]}" for name in _MODE_VARIABLES if name in os.environ]
        # The mock's stderr goes to a file of the test's, read when the test ends.
        self.command = ["sh", "-c", 'log="$1"; shift; exec env "$@" 2>>"$log"', "sh", str(log), *given, *mock]

    @property
    def params(self):
        """`mcp.StdioServerParameters` for the command, as the Python SDK's `stdio_client` takes them."""
        from mcp import StdioServerParameters

        return StdioServerParameters(command=self.command[0], args=self.command[1:])

    def stop(self) -> None:
        """Nothing to stop: the client ends the stdio mock when it closes its stdin."""

    def misses(self) -> list[str]:
        """What the mock said of the requests its recording held no answer for, once it has exited:
        its summary line and one line per miss, each naming the closest recorded call."""
        return miss_lines(self._log)


class McpHttpServer:
    """What the `mcp_server_url` fixture starts for a test: `calltape serve --mock --cassette-dir`
    on a free port of 127.0.0.1, whose `url` reaches the test's own recording at
    /_cassette/NAME/mcp. It is stopped when the test's call ends, so that its misses are known."""

    def __init__(self, binary: str, cassette_dir: Path, name: str, mode: str | None, upstream, log: Path):
        self.recording = cassette_dir / f"{name}.jsonl"
        self._log = log
        serve = [binary, "serve", "--mock", "--cassette-dir", str(cassette_dir), "--listen", "127.0.0.1:0"]
        serve += _mode_and_server(mode, upstream)
        with open(log, "ab") as stderr:
            self._process = subprocess.Popen(serve, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr)
        # serve prints its URL, http://127.0.0.1:PORT/mcp, as its first line once it listens.
        line = self._process.stdout.readline().decode("utf-8", "replace").strip()
        if not line.startswith("http://") or not line.endswith("/mcp"):
            self.stop()
            said = log.read_text(encoding="utf-8", errors="replace").strip()
            raise RuntimeError(f"calltape serve did not start: {said or line or 'it printed nothing'}")
        base = line[: -len("/mcp")]
        self.url = f"{base}/_cassette/{quote(name, safe='')}/mcp"

    def stop(self) -> None:
        """Stops the server (SIGTERM) and waits for it: it writes the recording and lists its misses."""
        if self._process.poll() is None:
            self._process.terminate()
        try:
            self._process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        if self._process.stdout:
            self._process.stdout.close()

    def misses(self) -> list[str]:
        """As `McpServer.misses`, once `stop` has returned."""
        return miss_lines(self._log)


def _mode_and_server(mode: str | None, upstream) -> list[str]:
    """The arguments of `calltape mock` and `serve --mock` that give the mode and the real server
    (a Streamable HTTP URL, or a command as a list of words)."""
    words = ["--mode", mode] if mode else []
    if isinstance(upstream, str):
        words += ["--url", upstream]
    elif upstream:
        words += ["--", *[str(word) for word in upstream]]
    return words


def miss_lines(log: Path) -> list[str]:
    """The lines of a mock's stderr that say what missed: its summary and one line per miss."""
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return []
    return [
        line
        for line in text.splitlines()
        if line.startswith("  miss: ") or (line.startswith("calltape mock") and " missed" in line and not line.endswith(" 0 missed"))
    ]


def new_log() -> Path:
    """A file for one mock's stderr."""
    handle, name = tempfile.mkstemp(prefix="pytest-calltape-mcp-", suffix=".log")
    os.close(handle)
    return Path(name)
