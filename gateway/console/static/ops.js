// The operator's views (operator keys only; the gateway refuses the calls
// to any other key): the recent audit records of every node, filterable
// by office, principal and outcome; who is connected, per office; each
// principal's quota state. Each view's state lives in its URL (app.js).

import { el, fill, latest, stamp } from "./dom.js";

// ctx: client() gives the signed-in client; fail(node, err) shows an
// error in node; go(hash) navigates (the filters live in the URL).

export const views = {
  audit: { title: "Audit", render: renderAudit, refresh: loadAudit },
  connections: { title: "Connections", render: renderConnections, refresh: loadConnections },
  quotas: { title: "Quotas", render: renderQuotas, refresh: loadQuotas },
};

// partial says which nodes could not be read, when some could not.
function partialNote(res) {
  return res.partial ? el("p", { class: "notice small", id: "ops-partial" }, `Not every node could be read: ${res.partial}`) : null;
}

function nodesNote(nodes, what) {
  const ns = (nodes ?? []).filter(Boolean);
  return el("p", { class: "small muted", id: "ops-nodes", "data-nodes": ns.length || 1 },
    ns.length > 1 ? `${what} of ${ns.length} nodes: ${ns.join(", ")} · ` : `${what} of this gateway · `, "as of ", stamp(new Date()));
}

// ---- audit ----

const outcomes = ["", "ok", "timeout", "cancelled", "400", "401", "403", "404", "429", "500", "503"];

function renderAudit(box, ctx, params) {
  const office = el("input", { id: "audit-office", type: "search", value: params.get("office") ?? "", placeholder: "office", autocomplete: "off" });
  const principal = el("input", { id: "audit-principal", type: "search", value: params.get("principal") ?? "", placeholder: "principal (key id, token subject)", autocomplete: "off" });
  const want = params.get("outcome") ?? "";
  const outcome = el("select", { id: "audit-outcome" },
    (outcomes.includes(want) ? outcomes : [...outcomes, want]).map((o) => el("option", { value: o, selected: o === want }, o || "any outcome")));
  const form = el("form", { class: "ops-form", method: "post", onsubmit: (ev) => {
    ev.preventDefault();
    const q = new URLSearchParams();
    for (const [k, v] of [["office", office.value.trim()], ["principal", principal.value.trim()], ["outcome", outcome.value]]) if (v) q.set(k, v);
    const s = q.toString();
    ctx.go(`#/ops/audit${s ? `?${s}` : ""}`);
  } }, office, principal, outcome, el("button", { type: "submit", id: "audit-filter" }, "Filter"));
  fill(box, el("h2", null, "Recent audit records"),
    el("p", { class: "small muted" }, "The last records each node wrote to its audit trail, newest first, from every node of a cluster."),
    form, el("div", { id: "audit-results" }, el("p", { class: "muted" }, "Loading records…")));
  box.dataset.params = params.toString();
  loadAudit(box, ctx);
}

async function loadAudit(box, ctx) {
  const out = box.querySelector("#audit-results");
  if (!out) return;
  const params = new URLSearchParams(box.dataset.params ?? "");
  const req = { limit: 200 };
  for (const k of ["office", "principal", "outcome"]) if (params.get(k)) req[k] = params.get(k);
  const current = latest(out);
  try {
    const res = await ctx.client().call("ListAudit", req);
    if (!current()) return;
    if (!res.enabled) {
      fill(out, el("p", { class: "muted", id: "audit-off" }, "This gateway keeps no audit trail (start it with --audit-file or --audit-stdout)."));
      return;
    }
    const recs = res.records ?? [];
    const heads = ["time", "node", "front", "event", "principal", "agent", "office", "computer", "what", "outcome", "reason", "ms"];
    fill(out, partialNote(res), nodesNote(res.nodes, "Records"),
      recs.length === 0 ? el("p", { class: "muted", id: "audit-none" }, "No record matches.") :
        el("div", { class: "scroll-x" }, el("table", { class: "ops-table", id: "audit-table" },
          el("thead", null, el("tr", null, heads.map((h) => el("th", null, h)))),
          el("tbody", null, recs.map((r) => el("tr", { class: `audit-record${r.outcome === "ok" ? "" : " refused"}`,
            "data-outcome": r.outcome, "data-office": r.office ?? "", "data-principal": r.principal ?? "" },
          el("td", { class: "small" }, stamp(r.time)), el("td", { class: "small" }, r.node ?? ""), el("td", { class: "small" }, r.front ?? ""),
          el("td", null, el("code", null, r.event)), el("td", null, r.principal ?? ""), el("td", null, r.agent ?? ""),
          el("td", null, r.office ?? ""), el("td", null, r.computer ?? ""),
          el("td", { class: "small" }, r.tool || r.resource || ""), el("td", { class: "outcome" }, r.outcome),
          el("td", { class: "small" }, r.reason ?? ""), el("td", { class: "small num" }, r.duration_ms != null ? Number(r.duration_ms).toFixed(1) : "")))))));
  } catch (e) {
    if (current()) ctx.fail(out, e);
  }
}

// ---- connections ----

const kindNames = { agent: "agent (Socket.IO)", computer: "computer", session: "Socket.IO, no office", seat: "agent seat", watch: "watching" };

// what says what a connection is in a few words.
function what(c) {
  if (c.kind === "seat") {
    if (c.front === "mcp") return c.lapses ? "MCP session" : "MCP request";
    if (c.front === "console") return c.lapses ? "console stream" : "console call";
    return c.lapses ? "RPC stream" : "RPC call";
  }
  return kindNames[c.kind] ?? c.kind;
}

// connectionsTable lists cs, grouped by office.
export function connectionsTable(cs, { office = true } = {}) {
  const heads = [office ? "office" : null, "what", "name", "principal", "front", "protocol", "since", "node"].filter(Boolean);
  return el("div", { class: "scroll-x" }, el("table", { class: "ops-table", id: "conn-table" },
    el("thead", null, el("tr", null, heads.map((h) => el("th", null, h)))),
    el("tbody", null, cs.map((c) => el("tr", { class: "conn", "data-kind": c.kind, "data-office": c.office ?? "", "data-front": c.front ?? "",
      "data-principal": c.principal ?? "" },
    office ? el("td", null, c.office || el("span", { class: "muted" }, "none")) : null,
    el("td", null, what(c)), el("td", null, c.name ?? ""), el("td", null, c.principal ?? ""),
    el("td", { class: "small" }, c.front ?? ""), el("td", { class: "small" }, c.protocol ?? ""),
    el("td", { class: "small" }, stamp(c.since)), el("td", { class: "small" }, c.node ?? ""))))));
}

function renderConnections(box, ctx) {
  fill(box, el("h2", null, "Who is connected"),
    el("p", { class: "small muted" }, "Socket.IO agents and computers, agent seats of MCP sessions and RPC calls and streams (the console's own included), and the watchers of offices, on every node. Other nodes' lists are at most a few seconds old."),
    el("div", { id: "conn-results" }, el("p", { class: "muted" }, "Loading…")));
  loadConnections(box, ctx);
}

async function loadConnections(box, ctx) {
  const out = box.querySelector("#conn-results");
  if (!out) return;
  const current = latest(out);
  try {
    const res = await ctx.client().call("ListConnections", {});
    if (!current()) return;
    const cs = res.connections ?? [];
    fill(out, partialNote(res), nodesNote(res.nodes, "Connections"),
      cs.length === 0 ? el("p", { class: "muted" }, "Nobody is connected.") : connectionsTable(cs));
  } catch (e) {
    if (current()) ctx.fail(out, e);
  }
}

// ---- quotas ----

function renderQuotas(box, ctx) {
  fill(box, el("h2", null, "Quotas"),
    el("p", { class: "small muted" }, "Each principal's bounds and their use: the calls it may make at once now (its rate's tokens left) and its calls in flight. Listed: the keys with a quota of their own, and the principals connected or calling."),
    el("div", { id: "quota-results" }, el("p", { class: "muted" }, "Loading…")));
  loadQuotas(box, ctx);
}

function quotaRow(q, tool) {
  const rate = q.calls_per_second ? `${q.calls_per_second}/s, burst ${q.burst}` : "unlimited";
  const tokens = q.tokens != null ? `${Math.floor(q.tokens)} of ${q.burst}` : "—";
  const flight = q.in_flight_limit ? `${q.in_flight ?? 0} of ${q.in_flight_limit}` : `${q.in_flight ?? 0}`;
  return el("tr", { class: tool ? "quota-tool" : "quota", "data-principal": q.principal, "data-tool": tool ?? null },
    el("td", null, tool ? el("span", { class: "muted" }, "  tool ", el("code", null, tool)) : el("strong", null, q.principal)),
    el("td", null, rate), el("td", { class: "tokens" }, tokens), el("td", { class: "in-flight" }, flight));
}

async function loadQuotas(box, ctx) {
  const out = box.querySelector("#quota-results");
  if (!out) return;
  const current = latest(out);
  try {
    const res = await ctx.client().call("ListQuotas", {});
    if (!current()) return;
    if (!res.enabled) {
      fill(out, el("p", { class: "muted", id: "quota-off" }, "This gateway has no quotas (quota entries in its keys file)."));
      return;
    }
    const qs = res.quotas ?? [];
    fill(out,
      el("p", { class: "small muted", id: "quota-rates" }, res.rates === "redis"
        ? "Rates are shared by the cluster's nodes (Redis); calls in flight are summed over the nodes that reported them."
        : "Rates are counted by this gateway."),
      qs.length === 0 ? el("p", { class: "muted" }, "No principal to show.") :
        el("div", { class: "scroll-x" }, el("table", { class: "ops-table", id: "quota-table" },
          el("thead", null, el("tr", null, ["principal", "rate", "calls available now", "in flight"].map((h) => el("th", null, h)))),
          el("tbody", null, qs.map((q) => [quotaRow(q),
            Object.entries(q.tools ?? {}).map(([name, t]) => quotaRow({ ...t, principal: q.principal }, name))])))));
  } catch (e) {
    if (current()) ctx.fail(out, e);
  }
}
