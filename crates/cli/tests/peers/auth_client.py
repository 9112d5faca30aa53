"""A client for the conformance suite's `auth/*` client scenarios, signing in through calltape.

Usage: python auth_client.py URL   (the suite appends the URL of the server it started)

The client (the Python SDK 2.x, in the era the suite names in MCP_CONFORMANCE_PROTOCOL_VERSION) speaks
stdio to `calltape bridge --url URL` (the binary named by $CALLTAPE_BIN; `calltape shared --url URL` with
AUTH_CLIENT_VIA_SHARED set, mcp-remote with AUTH_CLIENT_VIA_MCP_REMOTE), which signs in to the suite's
server with OAuth: $BROWSER is the test's opener, which follows the sign-in URL to calltape's loopback
redirect. The pre-registered client of MCP_CONFORMANCE_CONTEXT (and its secret, through
CALLTAPE_OAUTH_CLIENT_SECRET) is given to calltape's flags, with the client credentials grant for the
client credentials scenarios. It lists the tools and calls the suite's `test-tool`, as the suite's own
example clients do.
"""

import asyncio
import json
import os
import socket
import sys

from mcp import Client, StdioServerParameters

MODERN = "2026-07-28"
# The client ID metadata document URL the suite's `auth/basic-cimd` scenario expects.
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"


async def main(url: str) -> None:
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION", "2025-11-25")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    # `calltape shared --url`: the key's shared server signs in (it ends 2 s after the session).
    front = ["shared", "--key", "conformance", "--idle-exit", "2s"] if os.environ.get("AUTH_CLIENT_VIA_SHARED") else ["bridge"]
    args = [
        *front,
        "--url",
        url,
        "--protocol",
        "modern" if version == MODERN else "legacy",
        "--oauth-client-metadata-url",
        CLIENT_METADATA_URL,
    ]
    env = {**os.environ, "NO_COLOR": "1"}
    if "client_id" in context:
        args += ["--oauth-client-id", context["client_id"]]
        if "client_secret" in context:
            env["CALLTAPE_OAUTH_CLIENT_SECRET"] = context["client_secret"]
        if context.get("name", "").startswith("auth/client-credentials"):
            args.append("--oauth-client-credentials")
    bridge = StdioServerParameters(command=os.environ["CALLTAPE_BIN"], args=args, env=env)
    mcp_remote = os.environ.get("AUTH_CLIENT_VIA_MCP_REMOTE")
    if mcp_remote:
        bridge = via_mcp_remote(mcp_remote, url, context, modern=version == MODERN)
    # Within the suite's own 30 s: a client that gives up ends its bridge (or mcp-remote) with it,
    # where the suite's timeout would end only the shell that started it.
    async with asyncio.timeout(25):
        async with Client(bridge, mode=version if version == MODERN else "legacy") as client:
            await client.list_tools()
            await client.call_tool("test-tool", {})


def via_mcp_remote(proxy: str, url: str, context: dict, modern: bool) -> StdioServerParameters:
    """mcp-remote in front of `url`, given what calltape is given: the era (its `--protocol auto` for
    2026-07-28, where calltape gets `--protocol modern`), the client ID metadata document URL, the
    scenario's pre-registered client and the client credentials grant; on a free callback port."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    args = [proxy, url, str(port), "--client-metadata-url", CLIENT_METADATA_URL]
    if modern:
        args += ["--protocol", "auto"]
    if "client_id" in context:
        info = {"client_id": context["client_id"]}
        if "client_secret" in context:
            info["client_secret"] = context["client_secret"]
        args += ["--static-oauth-client-info", json.dumps(info)]
        if context.get("name", "").startswith("auth/client-credentials"):
            args.append("--client-credentials")
    env = {**os.environ, "MCP_REMOTE_CONFIG_DIR": os.path.join(os.environ["CALLTAPE_HOME"], "mcp-remote")}
    return StdioServerParameters(command=os.environ["AUTH_CLIENT_NODE"], args=args, env=env)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[-1]))
