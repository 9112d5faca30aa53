"""An MCP client (the official Python SDK) that drives `calltape bridge` for the end-to-end tests.

Usage: python bridge_client.py SCENARIO [ARGS...] -- SERVER_COMMAND...

Every scenario prints one JSON object on stdout describing what the client received; the Rust test
asserts on it. Environment: CALLTAPE_BIN (the calltape binary), when the scenario runs the bridge.
"""

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

TIMEOUT = 60


def dump(value):
    """A JSON-friendly form of SDK results."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", exclude_none=True)
    return value


class Notes:
    """Collects server notifications and wakes waiters for a method."""

    def __init__(self):
        self.methods = []
        self.errors = []
        self.changed = asyncio.Event()

    async def __call__(self, message):
        if isinstance(message, Exception):
            self.errors.append(repr(message))
            return
        root = getattr(message, "root", None)
        method = getattr(root, "method", None)
        if method and method.startswith("notifications/"):
            self.methods.append(method)
            if method == "notifications/tools/list_changed":
                self.changed.set()


def params(command):
    env = dict(os.environ)
    return StdioServerParameters(command=command[0], args=command[1:], env=env)


async def four_calls(session):
    tools = await session.list_tools()
    echo = await session.call_tool("echo", {"message": "hello through the bridge"})
    resource = await session.read_resource("demo://resource/static/document/architecture.md")
    prompt = await session.get_prompt("simple-prompt", {})
    return {
        "tools": sorted(t.name for t in tools.tools),
        "echo": dump(echo),
        "resource": dump(resource),
        "prompt": dump(prompt),
    }


async def calls(command):
    async with stdio_client(params(command)) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            result = await four_calls(session)
            result["server"] = init.serverInfo.name
            return result


def children(pid):
    """Processes whose parent is `pid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # The command name may hold spaces; the fields after its closing parenthesis do not.
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[1]) == pid:
            found.append(int(entry.name))
    return found


def bridge_pid():
    """The `calltape bridge` process this script started (through the SDK)."""
    for pid in children(os.getpid()):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"bridge" in cmdline:
            return pid
    raise RuntimeError("the bridge process was not found")


async def echo_text(session, text):
    result = await session.call_tool("echo", {"message": text})
    if result.isError:
        return {"error": dump(result)}
    return result.content[0].text


async def killed(command):
    notes = Notes()
    async with stdio_client(params(command)) as (read, write):
        async with ClientSession(read, write, message_handler=notes) as session:
            await session.initialize()
            before = await echo_text(session, "before")
            bridge = bridge_pid()
            servers = children(bridge)
            # The server may announce list changes of its own at startup: wait for the next one.
            notes.changed.clear()
            for pid in servers:
                os.killpg(pid, signal.SIGKILL)
            # The bridge restarts the server and says so.
            await asyncio.wait_for(notes.changed.wait(), TIMEOUT)
            after = [await echo_text(session, f"after {i}") for i in range(3)]
            restarted = children(bridge)
            return {
                "before": before,
                "after": after,
                "killed": servers,
                "restarted": restarted,
                "notifications": notes.methods,
                "errors": notes.errors,
            }


async def late(command):
    started = time.monotonic()
    async with stdio_client(params(command)) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            first = await echo_text(session, "first")
            return {
                "server": init.serverInfo.name,
                "first": first,
                "waited": time.monotonic() - started,
            }


async def watch(touch, command):
    notes = Notes()
    async with stdio_client(params(command)) as (read, write):
        async with ClientSession(read, write, message_handler=notes) as session:
            await session.initialize()
            before = await echo_text(session, "before")
            Path(touch).write_text(str(time.time()))
            await asyncio.wait_for(notes.changed.wait(), TIMEOUT)
            after = await echo_text(session, "after")
            return {
                "before": before,
                "after": after,
                "notifications": notes.methods,
                "errors": notes.errors,
            }


def peak_rss_kib(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError("no VmHWM")


def malformed(command):
    """Raw lines, since no SDK sends broken JSON: 1000 malformed lines, one 100 MB line, then a call."""
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    answers = []

    def read():
        for line in proc.stdout:
            answers.append(json.loads(line))

    reader = threading.Thread(target=read)
    reader.start()
    send = proc.stdin.write
    send(json.dumps({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "malformed", "version": "1"}},
    }).encode() + b"\n")
    send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    for i in range(1000):
        # Half are not JSON, half are JSON but not an object or array.
        send(b"{not json %d\n" % i if i % 2 == 0 else b"%d\n" % i)
    # 100 MB of a JSON string, written in pieces: the bridge must never hold it.
    send(b'{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"echo","arguments":{"message":"')
    piece = b"x" * (1 << 20)
    for _ in range(100):
        send(piece)
    send(b'"}}}\n')
    send(json.dumps({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"message": "still alive"}},
    }).encode() + b"\n")
    proc.stdin.flush()
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline and not any(a.get("id") == 2 for a in answers):
        time.sleep(0.05)
    peak = peak_rss_kib(proc.pid)
    proc.stdin.close()
    code = proc.wait(timeout=TIMEOUT)
    reader.join()
    reasons = {}
    for answer in answers:
        if "error" in answer and answer.get("id") is None:
            reason = answer["error"]["data"]["reason"]
            reasons[reason] = reasons.get(reason, 0) + 1
            assert answer["error"]["code"] == -32700, answer
    by_id = {a.get("id"): a for a in answers if a.get("id") is not None}
    return {
        "reasons": reasons,
        "initialize": "result" in by_id.get(1, {}),
        "call": by_id.get(2, {}).get("result", {}).get("content", [{}])[0].get("text"),
        "big_answered": 99 in by_id,
        "peak_rss_kib": peak,
        "exit": code,
    }


def main():
    argv = sys.argv[1:]
    split = argv.index("--")
    scenario, args, command = argv[0], argv[1:split], argv[split + 1 :]
    if scenario == "malformed":
        result = malformed(command)
    else:
        runs = {
            "calls": lambda: calls(command),
            "killed": lambda: killed(command),
            "late": lambda: late(command),
            "watch": lambda: watch(args[0], command),
        }
        result = asyncio.run(asyncio.wait_for(runs[scenario](), TIMEOUT))
    print(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    main()
