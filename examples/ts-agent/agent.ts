// An agent over the gateway's typed API with Connect-ES: it lists the offices
// the key may enter, the tools of the first computer it finds, and calls one
// tool (docs__search_documents, against `make run`'s demo).
//
//   make run                                  # terminal 1
//   cd examples/ts-agent && npm ci && npm start   # terminal 2
//
// Settings come from the environment: SMCP_URL (http://127.0.0.1:8080),
// SMCP_API_KEY (smcp-demo-key), SMCP_TOOL (docs__search_documents) and SMCP_PARAMS
// (a JSON object, {"query": "revenue"}). gen/ holds the types protoc-gen-es
// makes from proto/ (npm run generate).
import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { AgentService } from "./gen/smcp/v1/service_pb";

const baseUrl = process.env.SMCP_URL ?? "http://127.0.0.1:8080";
const apiKey = process.env.SMCP_API_KEY ?? "smcp-demo-key";
const tool = process.env.SMCP_TOOL ?? "docs__search_documents";
const params = JSON.parse(process.env.SMCP_PARAMS ?? '{"query": "revenue"}');

// Every call carries the API key; the gateway also takes "Authorization: Bearer <key>".
const withKey: Interceptor = (next) => (req) => {
  req.header.set("x-api-key", apiKey);
  return next(req);
};

// The Connect protocol over HTTP/1.1 (JSON on the wire would be useBinaryFormat: false,
// the default; createGrpcTransport speaks gRPC over HTTP/2 instead).
const client = createClient(AgentService, createConnectTransport({ baseUrl, httpVersion: "1.1", interceptors: [withKey] }));

async function main(): Promise<number> {
  const { offices } = await client.listOffices({});
  console.log(`offices: ${offices.map((o) => o.officeId).join(", ") || "(none)"}`);
  const found = offices.flatMap((o) => o.computers.map((computer) => ({ office: o.officeId, computer })));
  if (found.length === 0) {
    console.error("no computer has joined an office this key may enter");
    return 1;
  }
  const { office, computer } = found[0];

  const { tools } = await client.getTools({ officeId: office, computer });
  console.log(`tools of ${computer} in ${office}: ${tools.map((t) => t.name).join(", ")}`);

  const { result } = await client.callTool(
    { officeId: office, computer, toolName: tool, params, timeout: 30 },
    { timeoutMs: 60_000 },
  );
  console.log(`${tool} ${JSON.stringify(params)}: is_error=${result?.isError ?? false}`);
  for (const block of result?.content ?? []) {
    console.log(typeof block.text === "string" ? block.text : JSON.stringify(block));
  }
  return result?.isError ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err instanceof ConnectError ? `Connect error: ${Code[err.code]}: ${err.rawMessage}` : err);
    process.exit(1);
  },
);
