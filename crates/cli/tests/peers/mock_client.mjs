// An MCP client (the official TypeScript SDK) that makes the `calls` scenario of mock_client.py against
// `calltape mock`, then a call nobody recorded.
//
// Usage: node mock_client.mjs NODE_DIR -- COMMAND...
//
// NODE_DIR is the folder whose node_modules holds the SDK. Prints one JSON object with what the client
// received.

import { createRequire } from "node:module";
import { join } from "node:path";

const split = process.argv.indexOf("--");
const require = createRequire(join(process.argv[2], "package.json"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");

const [command, ...args] = process.argv.slice(split + 1);
const transport = new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" });
const client = new Client({ name: "mock-ts-client", version: "1.0.0" });
await client.connect(transport);

const texts = (result) => result.content.filter((c) => c.text !== undefined).map((c) => c.text);
const tools = await client.listTools();
const echo = await client.callTool({ name: "echo", arguments: { message: "hello", apiKey: "sk-test-ts-key-0003" } });
const sum = await client.callTool({ name: "get-sum", arguments: { a: 2, b: 40 } });
const again = await client.callTool({ name: "get-sum", arguments: { b: 40, a: 2 } });
const resource = await client.readResource({ uri: "demo://resource/static/document/architecture.md" });
const prompt = await client.getPrompt({ name: "simple-prompt", arguments: {} });
let miss;
try {
  await client.callTool({ name: "get-sum", arguments: { a: 2, b: 41 } });
  miss = "no error";
} catch (error) {
  miss = { code: error.code, message: error.message };
}
const out = {
  tools: tools.tools.map((t) => t.name).sort(),
  echo: texts(echo),
  sum: texts(sum),
  again: texts(again),
  resource: resource.contents.map((c) => c.text.slice(0, 40)),
  prompt: prompt.messages.map((m) => m.content.text),
  server: client.getServerVersion().name,
  miss,
};
await client.close();
console.log(JSON.stringify(out));
