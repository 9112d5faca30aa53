"""An MCP client (the official Python SDK 1.x) that answers the server's requests: sampling,
elicitation and roots, each through the SDK's own callback. It calls the tools of server-everything
that ask the client back, through `calltape record`.

Usage: python asks_client.py SCENARIO -- COMMAND...

SCENARIO is `everything` (the newest server-everything: `trigger-sampling-request`,
`trigger-elicitation-request`, `get-roots-list`) or `everything-old` (its older release: `sampleLLM`,
`startElicitation`, `listRoots`). The sampling answer names the prompt it was given, the elicitation
answer holds a password, and the roots are one folder ($ROOT_URI when set). Prints one JSON object: each tool's text, and
what the server asked.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

# What the user types into the elicitation form; the recording must not hold it.
PASSWORD = "correct-horse-battery-staple"
# A secret in a tool's argument that the server puts into its sampling request.
TOKEN = "ghp_4bC9dE1fG2hI3jK4lM5nO6pQ7rS8tU9vW0xY"

SCENARIOS = {
    "everything": [
        ("trigger-sampling-request", {"prompt": f"tides, token {TOKEN}", "maxTokens": 40}),
        ("trigger-elicitation-request", {}),
        ("get-roots-list", {}),
    ],
    "everything-old": [
        ("sampleLLM", {"prompt": f"tides, token {TOKEN}", "maxTokens": 40}),
        ("startElicitation", {}),
        ("listRoots", {}),
    ],
}


async def main(scenario, command):
    asked = []

    async def on_sample(context, params):
        asked.append("sampling/createMessage")
        # "Resource … context: tides, token …": the answer names the topic.
        topic = params.messages[0].content.text.split("context: ")[-1].split(",")[0]
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=f"a sampled answer about {topic}"),
            model="test-model",
            stopReason="endTurn",
        )

    async def on_elicit(context, params):
        asked.append("elicitation/create")
        # Keys in an order no sorting gives: the server prints them as it got them.
        return types.ElicitResult(
            action="accept",
            content={"name": "Ada Lovelace", "check": True, "color": "teal", "password": PASSWORD},
        )

    async def on_roots(context):
        asked.append("roots/list")
        uri = os.environ.get("ROOT_URI", "file:///srv/project")
        return types.ListRootsResult(roots=[types.Root(uri=uri, name="project")])

    server = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    async with stdio_client(server) as (read, write):
        async with ClientSession(
            read,
            write,
            sampling_callback=on_sample,
            elicitation_callback=on_elicit,
            list_roots_callback=on_roots,
        ) as session:
            await session.initialize()
            texts = {}
            for name, arguments in SCENARIOS[scenario]:
                result = await session.call_tool(name, arguments)
                texts[name] = [c.text for c in result.content if getattr(c, "text", None)]
            return {"texts": texts, "asked": asked}


if __name__ == "__main__":
    split = sys.argv.index("--")
    result = asyncio.run(asyncio.wait_for(main(sys.argv[1], sys.argv[split + 1 :]), 60))
    print(json.dumps(result))
