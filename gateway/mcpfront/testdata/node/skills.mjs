// The MCP Skills extension (SEP-2640) on /mcp/{office_id} through the
// official MCP TypeScript SDK client (run by gateway/mcpfront
// skillsext_test.go TestTypeScriptSDKSkills). The SDK has no skills API:
// its generic request() sends skills/list and skills/get, as a host
// implementing the extension on it does. One JSON line at the end.
import { createHash } from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ResultSchema } from "@modelcontextprotocol/sdk/types.js";

const client = new Client({ name: "mcpfront-ts-skills", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL(process.env.MCP_URL), {
  requestInit: { headers: { "x-api-key": process.env.MCP_KEY } },
});
await client.connect(transport);

const declared = client.getServerCapabilities()?.extensions?.["io.modelcontextprotocol/skills"];
// The office's computer may still be being listed: ask until a skill shows.
let list;
for (let i = 0; i < 300; i++) {
  list = await client.request({ method: "skills/list", params: {} }, ResultSchema);
  if (list.skills.length > 0) break;
  await new Promise((r) => setTimeout(r, 100));
}
const entry = list.skills[0];
const got = await client.request({ method: "skills/get", params: { uri: entry.uri } }, ResultSchema);
let refused = null;
try {
  await client.request({ method: "skills/get", params: { uri: "skill://pc/secret/SKILL.md" } }, ResultSchema);
} catch (e) {
  refused = { code: e.code, message: e.message };
}
const md = await client.readResource({ uri: entry.uri });
const root = entry.uri.slice(0, -"SKILL.md".length);
const data = await client.readResource({ uri: `${root}data.bin` });
const blob = Buffer.from(data.contents[0].blob, "base64");
console.log(JSON.stringify({
  declared,
  skills: list.skills,
  got: got.skill,
  refused,
  skillMD: md.contents[0].text,
  data: { size: blob.length, sha256: createHash("sha256").update(blob).digest("hex") },
}));
await transport.terminateSession();
await client.close();
process.exit(0);
