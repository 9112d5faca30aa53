"""An MCP client (the official Python SDK, 1.x or 2.x) that makes the calls `calltape mock` answers in the
end-to-end tests, against the reference "everything" server while recording, and against the mock after.

Usage: python mock_client.py SCENARIO (-- COMMAND... | --url URL)

COMMAND is the stdio server the client starts (`calltape record -o FILE -- SERVER…` or `calltape mock FILE`);
URL a Streamable HTTP endpoint (`calltape serve --mock FILE`). SCENARIO is:

- `calls`: the tool list, `echo` (with a key in its input), `get-sum` twice, a resource and a prompt;
- `miss`: `get-sum` with an input nobody recorded, then the same `echo` with another key;
- `written`: `echo`, `get-sum` and a resource, as a scenario written by hand holds them, or the first
  error's message;
- `asks`: the tools of asks_client.py's `everything` scenario that ask for a completion and for the
  user's input, answered as asks_client.py answers them.

With the SDK 2.x (venv2) the client is the SDK's `Client`, over stdio or HTTP, which speaks 2026-07-28
when the server's `server/discover` offers it. Prints one JSON object with what the client received.
"""

import asyncio
import json
import os
import sys

import mcp

MODERN = hasattr(mcp, "Client")
if MODERN:
    from mcp.shared.exceptions import MCPError as RpcError
else:
    from mcp.shared.exceptions import McpError as RpcError

STATIC = "demo://resource/static/document/architecture.md"


def texts(result):
    return [c.text for c in result.content if getattr(c, "text", None) is not None]


async def calls(session):
    tools = await session.list_tools()
    echo = await session.call_tool("echo", {"message": "hello", "apiKey": "sk-test-first-key-0001"})
    first = await session.call_tool("get-sum", {"a": 2, "b": 40})
    # The same call again, its arguments in another order.
    again = await session.call_tool("get-sum", {"b": 40, "a": 2})
    resource = await session.read_resource(STATIC)
    prompt = await session.get_prompt("simple-prompt", {})
    return {
        "tools": sorted(tool.name for tool in tools.tools),
        "echo": texts(echo),
        "sum": texts(first),
        "again": texts(again),
        "resource": [c.text[:40] for c in resource.contents],
        "prompt": [m.content.text for m in prompt.messages],
    }


async def miss(session):
    out = {}
    try:
        await session.call_tool("get-sum", {"a": 2, "b": 41})
        out["miss"] = "no error"
    except RpcError as error:
        out["miss"] = {"code": error.error.code, "message": error.error.message, "data": error.error.data}
    # A recorded "[REDACTED]" matches any value: another key still gets the recorded answer.
    out["echo"] = texts(await session.call_tool("echo", {"message": "hello", "apiKey": "sk-test-other-key-0002"}))
    return out


async def written(session):
    # The calls of a scenario written by hand (tests/it/mock.rs), each answer's texts, or the first
    # error's message.
    try:
        echo = await session.call_tool("echo", {"message": "hi"})
        total = await session.call_tool("get-sum", {"a": 2, "b": 40})
        resource = await session.read_resource(STATIC)
    except RpcError as error:
        return {"error": error.error.message}
    return {"echo": texts(echo), "sum": texts(total), "resource": [c.text[:40] for c in resource.contents]}


# What asks_client.py's user types and sends, so that the answers are the ones it recorded.
from asks_client import PASSWORD, TOKEN

ASKED = []


async def on_sample(context, params):
    ASKED.append("sampling/createMessage")
    topic = params.messages[0].content.text.split("context: ")[-1].split(",")[0]
    return types().CreateMessageResult(
        role="assistant",
        content=types().TextContent(type="text", text=f"a sampled answer about {topic}"),
        model="test-model",
        stopReason="endTurn",
    )


async def on_elicit(context, params):
    ASKED.append("elicitation/create")
    return types().ElicitResult(
        action="accept",
        content={"name": "Ada Lovelace", "check": True, "color": "teal", "password": PASSWORD},
    )


def types():
    if MODERN:
        import mcp_types

        return mcp_types
    from mcp import types as legacy_types

    return legacy_types


async def asks(session):
    # The calls of asks_client.py's `everything` scenario that ask the client back.
    texts = {}
    for name, arguments in [
        ("trigger-sampling-request", {"prompt": f"tides, token {TOKEN}", "maxTokens": 40}),
        ("trigger-elicitation-request", {}),
    ]:
        texts[name] = [c.text for c in (await session.call_tool(name, arguments)).content if getattr(c, "text", None)]
    return {"texts": texts, "asked": ASKED}


SCENARIOS = {"calls": calls, "miss": miss, "asks": asks, "written": written}
CALLBACKS = {"sampling_callback": on_sample, "elicitation_callback": on_elicit}


async def legacy(scenario, target):
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamablehttp_client

    if isinstance(target, str):
        transport = streamablehttp_client(target)
    else:
        transport = stdio_client(StdioServerParameters(command=target[0], args=target[1:], env=dict(os.environ)))
    async with transport as streams:
        async with ClientSession(streams[0], streams[1], **CALLBACKS) as session:
            init = await session.initialize()
            result = await SCENARIOS[scenario](session)
            result["server"] = init.serverInfo.name
            result["protocol"] = init.protocolVersion
            return result


async def modern(scenario, target):
    from mcp import Client, StdioServerParameters

    if not isinstance(target, str):
        target = StdioServerParameters(command=target[0], args=target[1:], env=dict(os.environ))
    async with Client(target, mode="auto", **CALLBACKS) as client:
        result = await SCENARIOS[scenario](client)
        result["server"] = client.server_info.name if client.server_info else None
        result["protocol"] = client.protocol_version
        return result


if __name__ == "__main__":
    scenario = sys.argv[1]
    if sys.argv[2] == "--url":
        target = sys.argv[3]
    else:
        target = sys.argv[sys.argv.index("--") + 1 :]
    run = modern if MODERN else legacy
    print(json.dumps(asyncio.run(asyncio.wait_for(run(scenario, target), 60))))
