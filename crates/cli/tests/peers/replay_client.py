"""An MCP client (the official Python SDK) that makes a scripted set of calls through `calltape record`.

Usage: python replay_client.py SCENARIO -- COMMAND...

COMMAND is the stdio server the client starts (for the tests: `calltape record -o FILE -- SERVER…` or
`calltape record -o FILE --url URL`). SCENARIO is `everything` (the reference server), `demo` (the
replay_server.py test server) or `payments` (pay_server.py, with the card token from $CARD) or `tasks` (the reference server, a
task-augmented call), `filesystem` (the filesystem reference server, whose last argument is the folder it serves,
holding a.txt and sub/b.txt), `surface` (any server: it reads every list the server offers, every page, as a client
that shows a server's tools does, and calls `echo` when there is one) or `graph` (server-memory's `read_graph`).
Prints one JSON object with what the client received.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

import replay_demo
from replay_demo import API_KEY

# Secrets the client puts in its arguments (and replay_demo.API_KEY); the recording must hold none of them.
BEARER = "Bearer rk_live_51HqLyjWDarjtT1zdp7dcXwq"
JWT = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJyZXBsYXktdGVzdCJ9.c2lnbmF0dXJlLW9mLXRoZS10ZXN0"


def dump(value):
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", exclude_none=True)
    return value


async def everything(session):
    echo = await session.call_tool(
        "echo",
        {"message": f"Authorization: {BEARER} and token {JWT}", "apiKey": API_KEY},
    )
    total = await session.call_tool("get-sum", {"a": 2, "b": 40})
    resource = await session.read_resource("demo://resource/static/document/architecture.md")
    prompt = await session.get_prompt("simple-prompt", {})
    return {"echo": dump(echo), "sum": dump(total), "resource": dump(resource), "prompt": dump(prompt)}


async def demo(session):
    return await replay_demo.demo(session, dump)


async def payments(session):
    # The card token comes from the environment, as a test's fill does.
    paid = await session.call_tool("pay", {"cardToken": os.environ["CARD"], "amount": 12})
    payment_id = (paid.structuredContent or json.loads(paid.content[0].text))["paymentId"]
    refund = await session.call_tool("refund", {"paymentId": payment_id})
    return {"pay": dump(paid), "refund": dump(refund), "paymentId": payment_id}


async def tasks(session):
    # A task-augmented call, polled to its end, its result fetched with tasks/result.
    import warnings

    from mcp.types import CallToolResult

    warnings.simplefilter("ignore", DeprecationWarning)
    created = await session.experimental.call_tool_as_task("simulate-research-query", {"topic": "tides"})
    task_id = created.task.taskId
    statuses = [status.status async for status in session.experimental.poll_task(task_id)]
    final = await session.experimental.get_task_result(task_id, CallToolResult)
    total = await session.call_tool("get-sum", {"a": 1, "b": 2})
    return {"statuses": statuses, "result": dump(final), "sum": dump(total)}


async def filesystem(session):
    # File facts (get_file_info prints their times), contents, listings and the server's own folder list.
    root = sys.argv[-1]
    calls = [
        ("get_file_info", {"path": f"{root}/a.txt"}),
        ("get_file_info", {"path": f"{root}/sub"}),
        ("read_text_file", {"path": f"{root}/a.txt"}),
        ("list_directory", {"path": root}),
        ("get_file_info", {"path": f"{root}/sub/b.txt"}),
        ("search_files", {"path": root, "pattern": "b.txt"}),
        ("list_allowed_directories", {}),
    ]
    return {"calls": [dump(await session.call_tool(name, args)) for name, args in calls]}


async def every_page(list_page, field):
    """The items of every page of a list, following nextCursor."""
    items, cursor = [], None
    while True:
        page = await list_page(cursor)
        items += [dump(item) for item in getattr(page, field)]
        cursor = page.nextCursor
        if not cursor:
            return items


async def surface(session, capabilities):
    # What the server offers decides what a careful client asks for.
    result = {}
    if capabilities.tools is not None:
        result["tools"] = [tool["name"] for tool in await every_page(session.list_tools, "tools")]
    if capabilities.prompts is not None:
        result["prompts"] = [prompt["name"] for prompt in await every_page(session.list_prompts, "prompts")]
    if capabilities.resources is not None:
        result["resources"] = [r["uri"] for r in await every_page(session.list_resources, "resources")]
        templates = await every_page(session.list_resource_templates, "resourceTemplates")
        result["templates"] = [t["uriTemplate"] for t in templates]
    if "echo" in result.get("tools", []):
        result["echo"] = dump(await session.call_tool("echo", {"message": "hello"}))
    return result


async def graph(session):
    return {"graph": dump(await session.call_tool("read_graph", {}))}


async def main(scenario, command):
    server = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            if scenario == "surface":
                result = await surface(session, init.capabilities)
            else:
                result = await {
                    "everything": everything,
                    "demo": demo,
                    "payments": payments,
                    "tasks": tasks,
                    "filesystem": filesystem,
                    "graph": graph,
                }[scenario](session)
            result["server"] = init.serverInfo.name
            return result


if __name__ == "__main__":
    split = sys.argv.index("--")
    result = asyncio.run(asyncio.wait_for(main(sys.argv[1], sys.argv[split + 1 :]), 60))
    print(json.dumps(result))
