"""A stdio MCP server of the handshake era that does one thing at a time, as many small servers do: it
reads a line, answers it, and only then reads the next, so while its stdout is full it reads nothing.

Its `tools/list` names 20 tools with a description of 1 KiB each (about 20 KiB per answer, so that a
few answers fill a pipe); `tools/call echo {text}` returns its text. Only the standard library.
"""

import json
import sys

TOOLS = [
    {
        "name": f"tool{n}",
        "description": f"tool {n} " + "." * 1024,
        "inputSchema": {"type": "object"},
    }
    for n in range(20)
]
TOOLS.append({"name": "echo", "description": "returns its text", "inputSchema": {"type": "object"}})


def answer(id_, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": id_, "result": result}) + "\n")
    sys.stdout.flush()


def main():
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        method, id_ = message.get("method"), message.get("id")
        if method is None or id_ is None:
            continue
        if method == "initialize":
            answer(id_, {
                "protocolVersion": message["params"].get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "serial-server", "version": "1.0.0"},
            })
        elif method == "ping":
            answer(id_, {})
        elif method == "tools/list":
            answer(id_, {"tools": TOOLS})
        elif method == "tools/call":
            text = message["params"].get("arguments", {}).get("text", "")
            answer(id_, {"content": [{"type": "text", "text": text}]})
        else:
            error = {"code": -32601, "message": f"method not found: {method}"}
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": id_, "error": error}) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    try:
        main()
    except (BrokenPipeError, KeyboardInterrupt):
        pass
