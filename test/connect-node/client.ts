// Interop test of the gateway's AgentService from Node, with the client that
// protoc-gen-es generates (gen/) and connect-node. Driven by
// gateway/rpc/node_test.go, which starts a gateway and a Socket.IO computer,
// runs this script and answers its "WATCHING" line by making the computer send
// server:update_tool_list.
//
// Env: SMCP_URL, SMCP_KEY, SMCP_OFFICE, SMCP_COMPUTER, SMCP_FORBIDDEN_OFFICE.
// Exit 0 and a last line "OK" on success; any failure throws.
import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { AgentService, type WatchOfficeResponse } from "./gen/smcp/v1/service_pb";
import { ErrorSchema } from "./gen/smcp/v1/types_pb";

function env(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`missing env ${name}`);
  return v;
}

const baseUrl = env("SMCP_URL");
const office = env("SMCP_OFFICE");
const computer = env("SMCP_COMPUTER");
const forbiddenOffice = env("SMCP_FORBIDDEN_OFFICE");

const withKey: Interceptor = (next) => (req) => {
  req.header.set("x-api-key", env("SMCP_KEY"));
  return next(req);
};

// Unary calls over the Connect protocol (HTTP/1.1), the watch over gRPC (h2c).
const connect = createClient(AgentService, createConnectTransport({ baseUrl, httpVersion: "1.1", interceptors: [withKey] }));
const grpc = createClient(AgentService, createGrpcTransport({ baseUrl, interceptors: [withKey] }));

function check(cond: boolean, what: string): void {
  if (!cond) throw new Error(`check failed: ${what}`);
}

async function main(): Promise<void> {
  const abort = new AbortController();
  const deadline = setTimeout(() => abort.abort(new Error("test deadline")), 20_000);

  // Open the watch and wait for its response headers: from then on no
  // notification of the office is missed.
  let watching!: () => void;
  const headers = new Promise<void>((resolve) => (watching = resolve));
  const stream = grpc.watchOffice({ officeId: office }, { signal: abort.signal, onHeader: () => watching() });
  const seen: WatchOfficeResponse[] = [];
  const waiters = new Set<() => void>();
  let ended = false;
  const wake = () => [...waiters].forEach((w) => w());
  abort.signal.addEventListener("abort", wake);
  const reader = (async () => {
    try {
      for await (const msg of stream) {
        seen.push(msg);
        wake();
      }
    } catch (e) {
      if (!abort.signal.aborted) throw e;
    } finally {
      ended = true;
      wake();
    }
  })();
  const waitFor = (pred: (r: WatchOfficeResponse) => boolean, what: string) =>
    new Promise<WatchOfficeResponse>((resolve, reject) => {
      const check = () => {
        const hit = seen.find(pred);
        if (hit) resolve(hit);
        else if (ended || abort.signal.aborted) reject(new Error(`the watch ended without a ${what} notification`));
        else return;
        waiters.delete(check);
      };
      waiters.add(check);
      check();
    });
  await Promise.race([headers, reader]);
  console.log("WATCHING");

  // A notification caused by the Socket.IO computer (the Go driver makes it
  // send server:update_tool_list when it reads WATCHING).
  const update = await waitFor((r) => r.event === "notify:update_tool_list", "update_tool_list");
  check(update.notification.case === "updateToolList" && update.notification.value.computer === computer,
    `update_tool_list from ${computer}: ${JSON.stringify(update.notification)}`);

  // A tool call routed to the computer.
  const res = await connect.callTool({ officeId: office, computer, toolName: "echo", params: { text: "hi from node" }, timeout: 10 });
  check(res.reqId !== "", "req_id generated");
  check(res.result?.isError !== true, `tool call succeeded: ${JSON.stringify(res.result)}`);
  const text = res.result?.content[0]?.["text"];
  check(text === "echo: hi from node", `echo text, got ${JSON.stringify(text)}`);

  // A cancellation is seen by every watcher of the office.
  await connect.cancelToolCall({ officeId: office, reqId: "node-cancel-1" });
  const cancel = await waitFor((r) => r.event === "notify:tool_call_cancel", "tool_call_cancel");
  check(cancel.notification.case === "toolCallCancel" && cancel.notification.value.reqId === "node-cancel-1",
    `tool_call_cancel: ${JSON.stringify(cancel.notification)}`);

  // An office the key does not allow: PermissionDenied with the SMCP detail.
  try {
    await connect.callTool({ officeId: forbiddenOffice, computer, toolName: "echo", params: {} });
    throw new Error("call in a forbidden office succeeded");
  } catch (e) {
    const err = ConnectError.from(e);
    check(err.code === Code.PermissionDenied, `PermissionDenied, got ${Code[err.code]}: ${err.message}`);
    const [detail] = err.findDetails(ErrorSchema);
    check(detail?.code === 403, `smcp.v1.Error detail with code 403, got ${JSON.stringify(detail)}`);
  }

  clearTimeout(deadline);
  abort.abort();
  await reader;
  console.log("OK");
}

main().catch((e) => {
  console.error(e instanceof Error ? e.stack ?? e.message : e);
  process.exit(1);
});
