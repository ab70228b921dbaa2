// The gateway's public Connect API, from the browser: unary calls as Connect
// JSON (POST, application/json) and server streams in Connect's enveloped
// JSON (application/connect+json) read with fetch streams. The API key goes
// in a header only, never in a URL.

const service = "/smcp.v1.AgentService/";

// APIError is a Connect error with the SMCP protocol code of its
// smcp.v1.Error detail, when the gateway sent one.
export class APIError extends Error {
  constructor(code, message, smcpCode) {
    super(message);
    this.code = code; // Connect code, e.g. "unauthenticated"
    this.smcpCode = smcpCode; // e.g. 401, 403, 4202; undefined when absent
  }
}

function fromConnectError(body, status) {
  const code = body?.code ?? httpCode(status);
  const message = body?.message ?? `HTTP ${status}`;
  const detail = (body?.details ?? []).find((d) => d.type === "smcp.v1.Error");
  return new APIError(code, message, detail?.debug?.code);
}

// httpCode maps an HTTP status without a Connect body (a proxy, a 404) to a
// Connect code, as the Connect protocol says.
function httpCode(status) {
  return { 400: "internal", 401: "unauthenticated", 403: "permission_denied", 404: "unimplemented",
    429: "unavailable", 502: "unavailable", 503: "unavailable", 504: "unavailable" }[status] ?? "unknown";
}

export class Client {
  // key is the API key; agent, when set, is sent as x-smcp-agent (the name
  // the console acts as); otherwise the gateway picks the key's name or its
  // default agent.
  // keyHeader is the gateway's API key header (its config.json says which).
  constructor(key, agent, keyHeader = "x-api-key") {
    this.key = key;
    this.agent = agent;
    this.keyHeader = keyHeader;
  }

  headers(contentType) {
    // x-smcp-front: the seats the console's calls take name the console,
    // not the RPC API, to the agents they refuse.
    const h = { "Content-Type": contentType, "Connect-Protocol-Version": "1", [this.keyHeader]: this.key, "x-smcp-front": "console" };
    if (this.agent) h["x-smcp-agent"] = this.agent;
    return h;
  }

  // call makes one unary call and returns the decoded response.
  async call(method, body = {}, signal) {
    let res;
    try {
      res = await fetch(service + method, {
        method: "POST", headers: this.headers("application/json"), body: JSON.stringify(body), signal,
        cache: "no-store", credentials: "omit",
      });
    } catch (e) {
      if (e.name === "AbortError") throw e;
      throw new APIError("unavailable", `the gateway cannot be reached (${e.message})`);
    }
    const text = await res.text();
    let parsed;
    try {
      parsed = text ? JSON.parse(text) : {};
    } catch {
      throw new APIError(httpCode(res.status), `HTTP ${res.status}: not a Connect answer`);
    }
    if (!res.ok) throw fromConnectError(parsed, res.status);
    return parsed;
  }

  // stream makes a server-streaming call and yields each message until the
  // stream ends; an error in the end-of-stream message is thrown. onOpen is
  // called once the gateway has answered with its headers.
  async *stream(method, body, signal, onOpen) {
    const json = new TextEncoder().encode(JSON.stringify(body));
    const envelope = new Uint8Array(5 + json.length);
    new DataView(envelope.buffer).setUint32(1, json.length);
    envelope.set(json, 5);
    let res;
    try {
      res = await fetch(service + method, {
        method: "POST", headers: this.headers("application/connect+json"), body: envelope, signal,
        cache: "no-store", credentials: "omit",
      });
    } catch (e) {
      if (e.name === "AbortError") throw e;
      throw new APIError("unavailable", `the gateway cannot be reached (${e.message})`);
    }
    if (!res.ok) {
      let parsed;
      try { parsed = await res.json(); } catch { parsed = undefined; }
      throw fromConnectError(parsed, res.status);
    }
    onOpen?.();
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buf = new Uint8Array(0);
    try {
      for (;;) {
        while (buf.length >= 5) {
          const flags = buf[0];
          const n = new DataView(buf.buffer, buf.byteOffset, buf.byteLength).getUint32(1);
          if (buf.length < 5 + n) break;
          const msg = JSON.parse(decoder.decode(buf.subarray(5, 5 + n)));
          buf = buf.slice(5 + n);
          if (flags & 0x01) throw new APIError("internal", "compressed stream message (none was asked for)");
          if (flags & 0x02) {
            if (msg.error) throw fromConnectError(msg.error, 200);
            return;
          }
          yield msg;
        }
        const { done, value } = await reader.read();
        if (done) throw new APIError("unavailable", "the stream ended without its end message");
        const next = new Uint8Array(buf.length + value.length);
        next.set(buf);
        next.set(value, buf.length);
        buf = next;
      }
    } finally {
      reader.cancel().catch(() => {});
    }
  }
}

// describe turns an error into a sentence for the user. agent is the name
// the console acts as ("" for the gateway's default).
export function describe(err, agent) {
  if (!(err instanceof APIError)) return String(err?.message ?? err);
  const as = agent ? `agent "${agent}"` : "the gateway's default agent (or the key's own name)";
  switch (err.code) {
    case "unauthenticated":
      return `The gateway refused this API key (${err.message}). Check the key and sign in again.`;
    case "permission_denied":
      if (/already has an agent/.test(err.message)) {
        return `${capitalize(err.message)}. An office holds one agent at a time, and the console acts as ${as}. ` +
          "Sign in with that agent's name to share the office, wait until it leaves, or (with an operator key) evict it.";
      }
      return `Not allowed: ${err.message}.`;
    case "unavailable":
      return `Unavailable: ${err.message}.`;
    default:
      return `${err.code}${err.smcpCode ? ` (SMCP ${err.smcpCode})` : ""}: ${err.message}`;
  }
}

function capitalize(s) {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
