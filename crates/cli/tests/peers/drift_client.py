"""An MCP client (the official Python SDK 1.x) that works with a published reference server as a
server author's session would, lists included, through `calltape record`.

Usage: python drift_client.py SCENARIO -- COMMAND...

COMMAND is the stdio server the client starts (for the tests: `calltape record -o FILE --methods … --
node SERVER`). SCENARIO is `everything` (server-everything: the lists, a few tools, the first listed
resource and prompt; a call that fails is part of the session) or `memory` (server-memory: the tool
list and a small knowledge graph built and read back). Prints one JSON object with what the client
received.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def dump(value):
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", exclude_none=True)
    return value


async def attempt(call):
    # An error answer is part of the session, recorded like any other.
    try:
        return dump(await call)
    except Exception as error:
        return {"error": str(error)}


async def everything(session):
    out = {"tools": [t.name for t in (await session.list_tools()).tools]}
    resources = (await session.list_resources()).resources
    out["resources"] = [str(r.uri) for r in resources]
    out["templates"] = [t.uriTemplate for t in (await session.list_resource_templates()).resourceTemplates]
    out["prompts"] = [p.name for p in (await session.list_prompts()).prompts]
    out["echo"] = await attempt(session.call_tool("echo", {"message": "hello drift"}))
    out["add"] = await attempt(session.call_tool("add", {"a": 2, "b": 40}))
    out["get-sum"] = await attempt(session.call_tool("get-sum", {"a": 2, "b": 40}))
    out["read"] = await attempt(session.read_resource(resources[0].uri))
    out["prompt"] = await attempt(session.get_prompt(out["prompts"][0], {}))
    return out


async def memory(session):
    out = {"tools": [t.name for t in (await session.list_tools()).tools]}
    people = [
        {"name": "Ada", "entityType": "person", "observations": ["writes programs"]},
        {"name": "Charles", "entityType": "person", "observations": ["builds engines"]},
    ]
    out["create"] = await attempt(session.call_tool("create_entities", {"entities": people}))
    relation = {"from": "Ada", "to": "Charles", "relationType": "works with"}
    out["relate"] = await attempt(session.call_tool("create_relations", {"relations": [relation]}))
    notes = [{"entityName": "Charles", "contents": ["designed the analytical engine"]}]
    out["observe"] = await attempt(session.call_tool("add_observations", {"observations": notes}))
    out["graph"] = await attempt(session.call_tool("read_graph", {}))
    out["search"] = await attempt(session.call_tool("search_nodes", {"query": "engine"}))
    out["open"] = await attempt(session.call_tool("open_nodes", {"names": ["Ada"]}))
    return out


async def main(scenario, command):
    server = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            return await {"everything": everything, "memory": memory}[scenario](session)


if __name__ == "__main__":
    split = sys.argv.index("--")
    result = asyncio.run(asyncio.wait_for(main(sys.argv[1], sys.argv[split + 1 :]), 60))
    print(json.dumps(result))
