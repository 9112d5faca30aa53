"""A 2026-07-28 client (the official Python SDK 2.x) that drives `calltape bridge` in front of a legacy
server, for the end-to-end tests of the era adapter.

Usage: python modern_client.py SCENARIO -- BRIDGE_COMMAND...

- `sdk`: the SDK's `Client`, which adopts 2026-07-28 from the bridge's `server/discover`: discover,
  the lists, a call, a read, a prompt, an elicitation and a sampling request answered through
  `input_required`, and a resource subscription through `subscriptions/listen`.
- `wire`: the same requests as raw JSON-RPC lines, each result checked against the SDK's strict
  2026-07-28 wire models (`mcp_types._v2026_07_28`), which require `resultType` and the cache fields
  where the SDK's own types would fill in defaults.

Each scenario prints one JSON object on stdout describing what the client received; the Rust test
asserts on it.
"""

import asyncio
import json
import os
import sys

import mcp_types as types
import mcp_types._v2026_07_28 as wire
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

TIMEOUT = 60
VERSION = "2026-07-28"
STATIC = "demo://resource/static/document/architecture.md"
MISSING = "demo://resource/static/document/no-such-file.md"
META = {
    "io.modelcontextprotocol/protocolVersion": VERSION,
    "io.modelcontextprotocol/clientInfo": {"name": "modern-wire-client", "version": "1.0.0"},
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
}


def texts(result):
    return [c.text for c in result.content if getattr(c, "text", None) is not None]


async def sdk(command):
    out = {"elicited": []}

    async def on_elicit(context, params):
        out["elicited"].append(params.message)
        return types.ElicitResult(action="accept", content={"name": "Ada Lovelace"})

    async def on_sample(context, params):
        out["sampled"] = [m.content.text for m in params.messages]
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="a sampled answer"),
            model="test-model",
        )

    server = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    info = types.Implementation(name="modern-sdk-client", version="2.3.0")
    # `auto` probes `server/discover` and adopts its answer; only a legacy fallback would negotiate
    # another version, which the test refuses.
    async with Client(
        server, mode="auto", elicitation_callback=on_elicit, sampling_callback=on_sample, client_info=info
    ) as client:
        discovered = client.session.discover_result
        out["protocol"] = client.protocol_version
        out["supported"] = discovered.supported_versions if discovered else None
        out["server"] = client.server_info.name if client.server_info else None
        out["tools"] = sorted(tool.name for tool in (await client.list_tools()).tools)
        out["echo"] = texts(await client.call_tool("echo", {"message": "hello, modern"}))
        out["resources"] = [r.uri for r in (await client.list_resources()).resources]
        read = await client.read_resource(STATIC)
        out["read"] = [c.uri for c in read.contents]
        out["prompts"] = sorted(p.name for p in (await client.list_prompts()).prompts)
        elicit = await client.call_tool("trigger-elicitation-request", {})
        out["elicitation"] = texts(elicit)
        sample = await client.call_tool("trigger-sampling-request", {"prompt": "say something", "maxTokens": 5})
        out["sampling"] = texts(sample)
        try:
            await client.read_resource(MISSING)
            out["missing"] = "no error"
        except MCPError as error:
            out["missing"] = {"code": error.error.code, "data": error.error.data}
        async with client.listen(resource_subscriptions=[STATIC]) as subscription:
            out["honored"] = subscription.honored.model_dump(by_alias=True, exclude_none=True)
            await client.call_tool("toggle-subscriber-updates", {})
            async with asyncio.timeout(TIMEOUT):
                async for event in subscription:
                    out["updated"] = getattr(event, "uri", repr(event))
                    break
        # The session still answers once the listen stream is cancelled.
        out["after_listen"] = texts(await client.call_tool("echo", {"message": "still here"}))
    return out


class Wire:
    """Raw JSON-RPC lines to the bridge's stdin, answers read from its stdout."""

    def __init__(self, process):
        self.process = process
        self.next = 0

    async def request(self, method, params=None):
        self.next += 1
        params = dict(params or {})
        params["_meta"] = {**META, **params.get("_meta", {})}
        message = {"jsonrpc": "2.0", "id": self.next, "method": method, "params": params}
        self.process.stdin.write((json.dumps(message) + "\n").encode())
        await self.process.stdin.drain()
        while True:
            line = await asyncio.wait_for(self.process.stdout.readline(), TIMEOUT)
            if not line:
                raise RuntimeError(f"the bridge closed its stdout before answering {method}")
            answer = json.loads(line)
            if answer.get("id") == self.next and "method" not in answer:
                return answer


async def wire_run(command):
    process = await asyncio.create_subprocess_exec(
        *command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    link = Wire(process)
    checked, failures = [], []

    async def check(model, method, params=None):
        answer = await link.request(method, params)
        if "result" not in answer:
            failures.append({"method": method, "answer": answer})
            return None
        try:
            model.model_validate(answer["result"])
            checked.append(method)
        except Exception as error:  # a pydantic ValidationError names the missing field
            failures.append({"method": method, "error": str(error), "result": answer["result"]})
        return answer["result"]

    try:
        await check(wire.DiscoverResult, "server/discover")
        await check(wire.ListToolsResult, "tools/list")
        await check(wire.ListPromptsResult, "prompts/list")
        await check(wire.ListResourcesResult, "resources/list")
        await check(wire.ListResourceTemplatesResult, "resources/templates/list")
        await check(wire.ReadResourceResult, "resources/read", {"uri": STATIC})
        await check(wire.CallToolResult, "tools/call", {"name": "echo", "arguments": {"message": "hi"}})
        await check(wire.GetPromptResult, "prompts/get", {"name": "simple-prompt"})
        first = await check(wire.InputRequiredResult, "tools/call", {"name": "trigger-elicitation-request"})
        if first is not None and first.get("resultType") == "input_required":
            key = next(iter(first["inputRequests"]))
            responses = {key: {"action": "accept", "content": {"name": "Ada Lovelace"}}}
            await check(
                wire.CallToolResult,
                "tools/call",
                {
                    "name": "trigger-elicitation-request",
                    "inputResponses": responses,
                    "requestState": first["requestState"],
                },
            )
        missing = await link.request("resources/read", {"uri": MISSING})
    finally:
        process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), 10)
        except TimeoutError:
            process.kill()
    return {"checked": checked, "failures": failures, "missing": missing.get("error")}


def main():
    scenario = sys.argv[1]
    command = sys.argv[sys.argv.index("--") + 1 :]
    run = {"sdk": sdk, "wire": wire_run}[scenario]
    print(json.dumps(asyncio.run(asyncio.wait_for(run(command), 3 * TIMEOUT))))


if __name__ == "__main__":
    main()
