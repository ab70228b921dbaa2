// A 0.4 office through /mcp/{office_id} with the official MCP TypeScript
// SDK client (run by gateway/mcpfront/node_test.go TestTypeScriptSDKClient04):
// tools by their exposed names, a tool result whose image the computer sent
// as a blob handle, and a skill read as a resource. One JSON line at the end.
import { createHash } from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const client = new Client({ name: "mcpfront-ts-04", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL(process.env.MCP_URL), {
  requestInit: { headers: { "x-api-key": process.env.MCP_KEY } },
});
await client.connect(transport);

const tools = (await client.listTools()).tools.map((t) => t.name).sort();
const echo = await client.callTool({ name: "pc4__fx__echo", arguments: { text: "from node" } });
const picture = await client.callTool({ name: "pc4__fx__picture", arguments: {} });
const image = picture.content.find((c) => c.type === "image");
const resources = (await client.listResources()).resources;
const skill = resources.find((r) => r.uri.startsWith("skill://"));
const body = await client.readResource({ uri: skill.uri });
const data = await client.readResource({ uri: `${skill.uri}/data.bin` });
const blob = Buffer.from(data.contents[0].blob, "base64");
console.log(JSON.stringify({
  tools,
  echo: echo.content[0].text,
  image: { mimeType: image.mimeType, size: Buffer.from(image.data, "base64").length, sha256: createHash("sha256").update(Buffer.from(image.data, "base64")).digest("hex") },
  skill: { uri: skill.uri, name: skill.name, text: body.contents[0].text },
  data: { size: blob.length, sha256: createHash("sha256").update(blob).digest("hex") },
}));
await transport.terminateSession();
await client.close();
process.exit(0);
