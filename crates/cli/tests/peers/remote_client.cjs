// A Streamable HTTP client of the official TypeScript SDK that sends its own bearer token, for the
// `serve --url` tests.
//
// Usage: node remote_client.cjs URL   (the SDK is taken from $CALLTAPE_PEERS/node)
//
// The token comes from CLIENT_TOKEN (none when unset or empty), never argv. Initializes (the SDK then
// opens the session's GET stream), lists the tools, calls `echo` and ends the session; prints on stdout
// {"tools": [names], "echo": text} or, when a request fails, {"error": text}.

const path = require("node:path");
const { createRequire } = require("node:module");

const peers = createRequire(path.join(process.env.CALLTAPE_PEERS, "node", "package.json"));
const { Client } = peers("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = peers("@modelcontextprotocol/sdk/client/streamableHttp.js");

async function main() {
  const token = process.env.CLIENT_TOKEN;
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  const transport = new StreamableHTTPClientTransport(new URL(process.argv[2]), {
    requestInit: { headers },
  });
  const client = new Client({ name: "remote-client-ts", version: "1.0.0" });
  let out;
  try {
    await client.connect(transport);
    const tools = await client.listTools();
    const echo = await client.callTool({ name: "echo", arguments: { message: "hello from typescript" } });
    out = { tools: tools.tools.map((t) => t.name), echo: echo.content[0].text };
    await transport.terminateSession();
  } catch (e) {
    out = { error: String(e && e.message ? e.message : e) };
  }
  await client.close().catch(() => {});
  process.stdout.write(JSON.stringify(out) + "\n");
}

main().then(() => process.exit(0));
