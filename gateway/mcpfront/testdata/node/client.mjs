// Drives the gateway's /mcp/{office_id} endpoint with the official MCP
// TypeScript SDK client (run by gateway/mcpfront/node_test.go). Each step
// prints one JSON line; the Go test answers on stdin when a step needs the
// office to change (a slow call started, a computer joined).
import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const url = process.env.MCP_URL;
const key = process.env.MCP_KEY;
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const say = (step, data) => console.log(JSON.stringify({ step, ...data }));
const next = async () => (await lines.next()).value;

const client = new Client({ name: "mcpfront-ts-test", version: "1.0.0" });
let toolsChanged = () => {};
client.setNotificationHandler(ToolListChangedNotificationSchema, () => toolsChanged());
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { "x-api-key": key } },
});
await client.connect(transport);

const names = async () => (await client.listTools()).tools.map((t) => t.name).sort();
say("tools", { names: await names() });

const texts = [];
for (const pc of ["pc1", "pc2"]) {
  const res = await client.callTool({ name: `${pc}__echo`, arguments: { text: "from node" } });
  texts.push(res.content[0].text);
}
say("call", { texts });

const abort = new AbortController();
const slow = client
  .callTool({ name: "pc2__slow", arguments: { tag: "node", seconds: 20 } }, undefined, { signal: abort.signal })
  .then(() => "finished", (err) => String(err));
say("slow-sent", {});
if ((await next()) !== "abort") throw new Error("expected abort");
abort.abort("the user gave up");
say("cancelled", { error: await slow });

const resources = (await client.listResources()).resources;
const doc = resources.find((r) => r.uri.startsWith("dpe://") && r.uri.split("/").length === 4);
const win = resources.find((r) => r.uri.startsWith("window://pc1/"));
const page = await client.readResource({ uri: `${doc.uri}/pages/0?format=markdown` });
const window = await client.readResource({ uri: win.uri });
say("read", { page: page.contents[0].text, window: window.contents[0].text });

const changed = new Promise((resolve) => (toolsChanged = resolve));
say("ready-for-join", {});
const timeout = new Promise((_, reject) => setTimeout(() => reject(new Error("no tools/list_changed")), 20000));
await Promise.race([changed, timeout]);
say("joined", { names: await names() });

await transport.terminateSession();
await client.close();
say("done", {});
process.exit(0);
