// Drives the gateway's /mcp/{office_id} endpoint with the official MCP
// TypeScript SDK client under a quota of one call (burst 1) every 10 s (run
// by gateway/mcpfront/node_test.go): prints, as one JSON line, how the SDK
// reports the refused second call and whether the session works after it.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const client = new Client({ name: "mcpfront-ts-quota", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL(process.env.MCP_URL), {
  requestInit: { headers: { "x-api-key": process.env.MCP_KEY } },
});
await client.connect(transport);

const first = await client.callTool({ name: "pc1__echo", arguments: { text: "one" } });
let refusal = null;
try {
  await client.callTool({ name: "pc1__echo", arguments: { text: "two" } });
} catch (err) {
  refusal = { name: err.name, code: err.code, message: String(err.message) };
}
const tools = (await client.listTools()).tools.length;
console.log(JSON.stringify({ first: first.content[0].text, refusal, tools }));

await transport.terminateSession();
await client.close();
process.exit(0);
