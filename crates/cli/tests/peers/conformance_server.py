"""The server the official MCP conformance suite's server scenarios test, written with the Python SDK 2.x.

Usage: python conformance_server.py --era legacy|modern|both --transport stdio|http [--port N]

It implements what the scenarios call (tools such as `test_simple_text`, the `test://` resources, the
`test_*` prompts, completion, logging and subscriptions), in one or both protocol eras:

- `both`: what the SDK serves by default, the `initialize` handshake and 2026-07-28 stateless requests;
- `modern`: 2026-07-28 only; `initialize` is refused: over HTTP as a method that does not exist (-32601,
  HTTP 404), as the suite's `server-stateless` scenario wants, over stdio with -32022 (unsupported protocol
  version), as the SDK's 2026-07-28 connection does;
- `legacy`: the handshake era only, as a server that predates 2026-07-28: over HTTP `server/discover` is
  an unknown method (-32601) and a request that carries the 2026-07-28 `_meta` envelope is refused with
  -32022 naming the handshake versions (`initialize` is taken whatever its `_meta` holds, as the SDK does);
  over stdio the SDK's handshake-era connection refuses every enveloped request (-32600).

Over HTTP it listens on 127.0.0.1:PORT/mcp only.
"""

import argparse
import asyncio
import base64

import anyio
import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import UserMessage
from mcp.server.runner import _serve_legacy_stream, _serve_modern_stream, serve_dual_era_loop
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

# A 1x1 PNG and a tiny WAV: the scenarios check the shape of image, audio and blob content, not the pixels.
PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360f8cf00000301010018dd8db00000000049454e44ae426082"
    )
).decode()
WAV = base64.b64encode(
    b"RIFF" + (36).to_bytes(4, "little") + b"WAVEfmt " + (16).to_bytes(4, "little")
    + (1).to_bytes(2, "little") + (1).to_bytes(2, "little") + (8000).to_bytes(4, "little")
    + (8000).to_bytes(4, "little") + (1).to_bytes(2, "little") + (8).to_bytes(2, "little")
    + b"data" + (0).to_bytes(4, "little")
).decode()

PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
MODERN_VERSIONS = ["2026-07-28"]
HANDSHAKE_VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]

# The JSON Schema 2020-12 fixture the json-schema-2020-12 scenario looks for, keyword for keyword.
JSON_SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


def era_gate(era: str):
    """A server middleware that keeps the server to one protocol era."""

    async def gate(ctx, call_next):
        params = ctx.params or {}
        meta = params.get("_meta") if isinstance(params, dict) else None
        enveloped = isinstance(meta, dict) and PROTOCOL_VERSION_KEY in meta
        if era == "modern" and ctx.method == "initialize":
            # The 2026-07-28 spec removed initialize: a server without it answers as for any unknown method.
            raise MCPError(code=types.METHOD_NOT_FOUND, message="Method not found", data=ctx.method)
        if era == "legacy" and ctx.method == "server/discover":
            raise MCPError(code=types.METHOD_NOT_FOUND, message="Method not found", data=ctx.method)
        if era == "legacy" and enveloped and ctx.method != "initialize":
            raise MCPError(
                code=types.UNSUPPORTED_PROTOCOL_VERSION,
                message="this server speaks the initialize handshake only",
                data={"supported": HANDSHAKE_VERSIONS, "requested": meta.get(PROTOCOL_VERSION_KEY)},
            )
        return await call_next(ctx)

    return gate


def text(value: str) -> types.TextContent:
    return types.TextContent(type="text", text=value)


def build(era: str) -> MCPServer:
    mcp = MCPServer(
        "calltape-conformance-server",
        version="1.0.0",
        middleware=[] if era == "both" else [era_gate(era)],
    )

    @mcp.tool(description="Returns one text content block")
    def test_simple_text() -> list:
        return [text("This is a simple text response for testing.")]

    @mcp.tool(description="Returns one image content block")
    def test_image_content() -> list:
        return [types.ImageContent(type="image", data=PNG, mime_type="image/png")]

    @mcp.tool(description="Returns one audio content block")
    def test_audio_content() -> list:
        return [types.AudioContent(type="audio", data=WAV, mime_type="audio/wav")]

    @mcp.tool(description="Returns one embedded resource")
    def test_embedded_resource() -> list:
        return [embedded("test://embedded-resource", "This is an embedded resource content.")]

    @mcp.tool(description="Returns text, image and resource content")
    def test_multiple_content_types() -> list:
        return [
            text("Multiple content types test:"),
            types.ImageContent(type="image", data=PNG, mime_type="image/png"),
            embedded("test://mixed-content-resource", '{"test": "data", "value": 123}', "application/json"),
        ]

    @mcp.tool(description="Sends three log messages while it runs")
    async def test_tool_with_logging(ctx: Context) -> list:
        for message in ["Tool execution started", "Tool processing data", "Tool execution completed"]:
            await ctx.log("info", message)
            await asyncio.sleep(0.05)
        return [text("Tool with logging executed successfully")]

    @mcp.tool(description="Reports progress 0, 50 and 100 of 100")
    async def test_tool_with_progress(ctx: Context) -> list:
        for step in [0, 50, 100]:
            await ctx.report_progress(step, 100, f"Completed step {step} of 100")
            await asyncio.sleep(0.05)
        return [text("Progress test completed")]

    @mcp.tool(description="Always fails with a tool error")
    def test_error_handling() -> list:
        raise ValueError("This tool intentionally returns an error for testing")

    @mcp.tool(description="Asks the client's model for a completion")
    async def test_sampling(prompt: str, ctx: Context):
        answers = await ask(ctx, {"sampling": sampling(prompt)})
        if isinstance(answers, types.InputRequiredResult):
            return answers
        return [text(f"LLM response: {answers['sampling']['content'].get('text', 'No response')}")]

    @mcp.tool(description="Asks the user for input")
    async def test_elicitation(message: str, ctx: Context):
        answers = await ask(ctx, {"elicitation": elicitation(message, "response")})
        if isinstance(answers, types.InputRequiredResult):
            return answers
        answer = answers["elicitation"]
        return [text(f"User response: action={answer['action']}, content={answer.get('content') or {}}")]

    @mcp.tool(description="Asks the user for their name")
    async def test_input_required_result_elicitation(ctx: Context):
        answers = await ask(ctx, {"user_name": elicitation("What is your name?", "name")})
        if isinstance(answers, types.InputRequiredResult):
            return answers
        return [text(f"Hello, {(answers['user_name'].get('content') or {}).get('name')}!")]

    @mcp.tool(description="Asks the client's model a question")
    async def test_input_required_result_sampling(ctx: Context):
        answers = await ask(ctx, {"capital_question": sampling("What is the capital of France?")})
        if isinstance(answers, types.InputRequiredResult):
            return answers
        return [text(f"The model says: {answers['capital_question']['content'].get('text')}")]

    @mcp.tool(description="Asks the client for its roots")
    async def test_input_required_result_list_roots(ctx: Context):
        answers = await ask(ctx, {"client_roots": {"method": "roots/list", "params": {}}})
        if isinstance(answers, types.InputRequiredResult):
            return answers
        uris = [root["uri"] for root in answers["client_roots"]["roots"]]
        return [text(f"The client's roots: {', '.join(uris)}")]

    @mcp.tool(description="Needs the client's sampling capability, and says so when it is not declared")
    async def test_missing_capability(ctx: Context) -> list:
        capabilities = ctx.client_capabilities
        if capabilities is None or capabilities.sampling is None:
            raise MCPError(
                code=-32021,
                message="this tool needs the client's sampling capability",
                data={"requiredCapabilities": {"sampling": {}}},
            )
        return [text("the client declared sampling")]

    @mcp.tool(description="A tool whose input schema uses JSON Schema 2020-12")
    def json_schema_2020_12_tool() -> list:
        return [text("ok")]

    mcp._tool_manager.get_tool("json_schema_2020_12_tool").parameters = JSON_SCHEMA_2020_12

    @mcp.resource("test://static-text", name="static-text", description="A static text resource",
                  mime_type="text/plain")
    def static_text() -> str:
        return "This is the content of the static text resource."

    @mcp.resource("test://static-binary", name="static-binary", description="A static binary resource",
                  mime_type="image/png")
    def static_binary() -> bytes:
        return base64.b64decode(PNG)

    @mcp.resource("test://template/{id}/data", name="template", description="A resource template",
                  mime_type="application/json")
    def template(id: str) -> str:
        return f'{{"id": "{id}", "templateTest": true, "data": "Data for ID: {id}"}}'

    @mcp.resource("test://watched-resource", name="watched-resource", description="A resource to subscribe to",
                  mime_type="text/plain")
    def watched() -> str:
        return "Watched resource content"

    @mcp.prompt(description="A prompt with no arguments")
    def test_simple_prompt() -> list:
        return [UserMessage("This is a simple prompt for testing.")]

    @mcp.prompt(description="A prompt with two required arguments")
    def test_prompt_with_arguments(arg1: str, arg2: str) -> list:
        return [UserMessage(f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'")]

    @mcp.prompt(description="A prompt that embeds a resource")
    def test_prompt_with_embedded_resource(resourceUri: str) -> list:
        return [
            UserMessage(embedded(resourceUri, "Embedded resource content for testing.")),
            UserMessage("Please process the embedded resource above."),
        ]

    @mcp.prompt(description="A prompt that holds an image")
    def test_prompt_with_image() -> list:
        return [
            UserMessage(types.ImageContent(type="image", data=PNG, mime_type="image/png")),
            UserMessage("Please analyze the image above."),
        ]

    @mcp.completion()
    async def complete(ref, argument, context):
        return types.Completion(values=[f"{argument.value}-one", f"{argument.value}-two"], total=2, has_more=False)

    add_handshake_handlers(mcp)
    return mcp


def sampling(prompt: str) -> dict:
    return {
        "method": "sampling/createMessage",
        "params": {"messages": [{"role": "user", "content": {"type": "text", "text": prompt}}], "maxTokens": 100},
    }


def elicitation(message: str, field: str) -> dict:
    return {
        "method": "elicitation/create",
        "params": {
            "message": message,
            "requestedSchema": {"type": "object", "properties": {field: {"type": "string"}}, "required": [field]},
        },
    }


async def ask(ctx: Context, requests: dict):
    """The client's answers to `requests` (key -> {method, params}), as JSON, in either era.

    In 2026-07-28 the answers come in the retried request's `inputResponses`: until they all do, the
    `InputRequiredResult` that asks for them is returned. In the handshake era they are asked over the
    session, as server-to-client requests.
    """
    if ctx.protocol_version in MODERN_VERSIONS:
        responses = ctx.input_responses or {}
        missing = {key: request for key, request in requests.items() if key not in responses}
        if missing:
            return types.InputRequiredResult.model_validate({"inputRequests": missing})
        return {key: dump(responses[key]) for key in requests}
    session = ctx.request_context.session
    answers = {}
    for key, request in requests.items():
        params = request["params"]
        if request["method"] == "sampling/createMessage":
            message = params["messages"][0]["content"]["text"]
            result = await session.create_message(
                messages=[types.SamplingMessage(role="user", content=text(message))], max_tokens=params["maxTokens"]
            )
        elif request["method"] == "elicitation/create":
            result = await session.elicit_form(message=params["message"], requested_schema=params["requestedSchema"])
        else:
            result = await session.list_roots()
        answers[key] = dump(result)
    return answers


def dump(value) -> dict:
    if isinstance(value, dict):
        return value
    return value.model_dump(by_alias=True, mode="json", exclude_none=True)


def embedded(uri: str, body: str, mime_type: str = "text/plain") -> types.EmbeddedResource:
    return types.EmbeddedResource(
        type="resource", resource=types.TextResourceContents(uri=uri, mime_type=mime_type, text=body)
    )


def add_handshake_handlers(mcp: MCPServer) -> None:
    """`logging/setLevel` and resource subscriptions, which the handshake era's scenarios call."""
    server = mcp._lowlevel_server

    async def set_level(ctx, params):
        return types.EmptyResult()

    async def subscribe(ctx, params):
        return types.EmptyResult()

    server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)
    server.add_request_handler("resources/subscribe", types.SubscribeRequestParams, subscribe)
    server.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, subscribe)


async def run_stdio(mcp: MCPServer, era: str) -> None:
    """Serves one stdio connection. The SDK lets the first request pick the connection's era for good; a
    one-era server serves its era from the start, so a request of the other era, even the first, never
    locks it into that era."""
    server = mcp._lowlevel_server
    async with stdio_server() as (read, write), server.lifespan(server) as state:
        if era == "both":
            await serve_dual_era_loop(
                server, read, write, lifespan_state=state, init_options=server.create_initialization_options()
            )
            return
        try:
            if era == "modern":
                await _serve_modern_stream(server, read, write, lifespan_state=state, raise_exceptions=False)
            else:
                await _serve_legacy_stream(
                    server,
                    read,
                    write,
                    lifespan_state=state,
                    session_id=None,
                    init_options=server.create_initialization_options(),
                    raise_exceptions=False,
                )
        finally:
            await write.aclose()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--era", choices=["legacy", "modern", "both"], required=True)
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    mcp = build(args.era)
    if args.transport == "stdio":
        anyio.run(run_stdio, mcp, args.era)
    else:
        mcp.run("streamable-http", host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
