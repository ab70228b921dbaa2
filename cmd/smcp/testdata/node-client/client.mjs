// A client of `smcp docs` built on the official TypeScript MCP SDK: it starts
// the command given in SMCP_DOCS_CMD (a JSON array) over stdio, exercises
// resources, templates, reads, a DPE error, completion and a subscription
// (editing SMCP_EDIT_FILE), and prints what it saw as one JSON object.
import { writeFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [command, ...args] = JSON.parse(process.env.SMCP_DOCS_CMD);
const host = process.env.SMCP_DOCS_HOST;
const transport = new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" });
const client = new Client({ name: "node-client", version: "1.0.0" });
await client.connect(transport);

const out = { capabilities: client.getServerCapabilities() };
out.resources = (await client.listResources()).resources.map((r) => ({ uri: r.uri, mimeType: r.mimeType, annotations: r.annotations }));
out.templates = (await client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate).sort();

const catalog = JSON.parse((await client.readResource({ uri: `dpe://${host}` })).contents[0].text);
out.catalog = catalog;
const doc = catalog.documents[0];
const page = (await client.readResource({ uri: `${doc.uri}/pages/1?format=markdown` })).contents[0];
out.page = { mimeType: page.mimeType, text: page.text };

try {
  await client.readResource({ uri: `${doc.uri}/pages/${doc.page_count}` });
  out.error = null;
} catch (e) {
  out.error = { code: e.code, data: e.data };
}
try {
  await client.readResource({ uri: `${doc.uri}?limit=0` });
} catch (e) {
  out.invalid = { code: e.code, data: e.data };
}

out.completion = (await client.complete({
  ref: { type: "ref/resource", uri: `dpe://${host}/{doc_ref}/pages/{page_index}` },
  argument: { name: "page_index", value: "" },
  context: { arguments: { doc_ref: doc.doc_ref } },
})).completion;

const updated = new Promise((resolve, reject) => {
  const timer = setTimeout(() => reject(new Error("no resources/updated within 20 s")), 20000);
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
    clearTimeout(timer);
    resolve(n.params.uri);
  });
});
await client.subscribeResource({ uri: doc.uri });
writeFileSync(process.env.SMCP_EDIT_FILE, "# Edited\n\nBy the node client.\n");
out.updated = await updated;

console.log(JSON.stringify(out));
await client.close();
