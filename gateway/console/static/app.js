// The SMCP web console: the offices an API key may see (with the protocol
// version each speaks), their agents and computers live, a computer's tools
// (with forms from their schemas), desktop, finder and skills, blob
// downloads, and the gateway's own figures; for operator keys, the recent
// audit records, who is connected and the quotas' state (ops.js). It talks
// to the gateway only through its public Connect API; the key lives in
// sessionStorage and in request headers, never in a URL.
//
// Each view has a URL (its hash: #/office/ID, #/office/ID/COMPUTER/TAB,
// #/ops/VIEW?filters), so that a reload, a link or Back returns to it.
//
// A computer's tabs are panels kept while the computer is open: switching
// tabs only shows another, and a live update (WatchOffice) refreshes a
// panel's list in place (or marks it stale while hidden), never the page the
// user is reading: an open tool and its result, a Finder document, a skill.

import { APIError, Client, describe } from "./api.js";
import { el, fill, latest, stamp, table, tree } from "./dom.js";
import { buildForm } from "./form.js";
import { renderResult } from "./result.js";
import { Metrics } from "./metrics.js";
import { downloadButton, fileName } from "./blob.js";
import { renderSkills, refreshSkills } from "./skills.js";
import { connectionsTable, views as opsViews } from "./ops.js";

const $ = (sel) => document.querySelector(sel);
const store = window.sessionStorage;
const KEY = "smcp.console.key";
const AGENT = "smcp.console.agent";

const state = {
  client: null,
  offices: [],
  office: null, // selected office id
  computer: null, // selected computer name
  tab: "tools",
  panels: new Map(), // tab -> {node, stale} of the open computer
  watch: null, // AbortController of the WatchOffice stream
  live: null,
  watchVersion: "", // the office's version as the watch last said
  events: [],
  finder: { keywords: "", fileType: "", offset: 0, limit: 10 },
  reading: null, // the dpe:// URI open in the Finder's reader
  ops: null, // {view, params} of the operator view shown instead of an office
};

const metrics = new Metrics($("#metrics"));
// Below this width the panes stack (style.css says the same).
const narrow = window.matchMedia("(max-width: 900px)");

// The gateway says which header carries the key (smcp gateway
// --api-key-header); x-api-key when it cannot be read.
const config = await fetch("config.json", { cache: "no-store", credentials: "omit" })
  .then((r) => (r.ok ? r.json() : {}))
  .catch(() => ({}));
const keyHeader = typeof config.api_key_header === "string" && config.api_key_header ? config.api_key_header : "x-api-key";

// ---- sign in / out ----

function showLogin(message) {
  stopWatch();
  clearInterval(state.poll);
  metrics.stop();
  state.client = null;
  $("#app").hidden = true;
  $("#login").hidden = false;
  $("#whoami").textContent = "";
  fill($("#login-error"), message ? message : null);
  $("#login-error").hidden = !message;
  $("#key").focus();
}

async function signIn(key, agent) {
  const client = new Client(key, agent, keyHeader);
  await client.call("ListOffices", {}); // the key's first test
  store.setItem(KEY, key);
  if (agent) store.setItem(AGENT, agent);
  else store.removeItem(AGENT);
  state.client = client;
  $("#login").hidden = true;
  $("#app").hidden = false;
  $("#whoami").textContent = agent ? `acting as agent "${agent}"` : "acting as the gateway's default agent";
  metrics.start(client);
  await refreshOffices();
  // The URL says which view to return to (a reload, a link).
  applyRoute(location.hash, true);
  clearInterval(state.poll);
  // ListOffices holds no office, so polling it keeps no agent out.
  state.poll = setInterval(() => {
    refreshOffices().catch(() => {});
    refreshOps();
    refreshOfficeConnections();
  }, 5000);
}

$("#login-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const key = $("#key").value.trim();
  const agent = $("#agent").value.trim();
  if (!key) {
    showLogin("Enter the API key.");
    return;
  }
  $("#sign-in").disabled = true;
  try {
    await signIn(key, agent);
    $("#key").value = "";
  } catch (e) {
    store.removeItem(KEY);
    showLogin(describe(e, agent));
  } finally {
    $("#sign-in").disabled = false;
  }
});

$("#sign-out").addEventListener("click", () => {
  store.removeItem(KEY);
  store.removeItem(AGENT);
  state.office = state.computer = state.reading = state.ops = null;
  state.tab = "tools";
  state.finder = { keywords: "", fileType: "", offset: 0, limit: 10 };
  history.replaceState(null, "", location.pathname);
  showLogin("");
});

// ---- routes: each view's URL ----

// routeOf is the hash of the view shown.
function routeOf() {
  const e = encodeURIComponent;
  if (state.ops) {
    const q = state.ops.params.toString();
    return `#/ops/${state.ops.view}${q ? `?${q}` : ""}`;
  }
  if (!state.office) return "";
  if (!state.computer) return `#/office/${e(state.office)}`;
  return `#/office/${e(state.office)}/${e(state.computer)}/${state.tab}`;
}

// syncRoute records the view shown in the URL, as a new history entry
// (Back returns to the previous view).
function syncRoute() {
  if (!state.client) return;
  const want = routeOf();
  if (location.hash !== want && !(want === "" && location.hash === "#")) {
    history.pushState(null, "", want || location.pathname);
  }
}

// go shows the view of hash (an operator view's filters are in it).
function go(hash) {
  history.pushState(null, "", hash);
  applyRoute(hash);
}

// applyRoute shows the view hash names; first: at sign-in, when an
// office named may not be listed (yet) but is opened all the same.
function applyRoute(hash, first = false) {
  const m = /^#\/(office|ops)\/([^?]*)(?:\?(.*))?$/.exec(hash ?? "");
  if (!m) {
    if (state.office || state.ops) {
      stopWatch();
      state.office = state.computer = state.ops = null;
      renderDetail();
      renderOffices();
    } else if (first) renderDetail();
    return;
  }
  if (m[1] === "ops") {
    showOps(m[2], new URLSearchParams(m[3] ?? ""));
    return;
  }
  const [office, computer, tab] = m[2].split("/").map((x) => decodeURIComponent(x));
  if (!office) return;
  if (computer) {
    if (tab && state.office === office && state.computer === computer) showTab(tab);
    else {
      if (tab) state.tab = tab;
      selectComputer(office, computer);
    }
  } else selectOffice(office);
}

// ---- operator views (ops.js) ----

function opsCtx() {
  return { client: () => state.client, fail, go };
}

// showOps shows an operator view in the detail pane, instead of an office
// (whose watch ends: it would hold the office's seat unseen).
function showOps(view, params) {
  if (!opsViews[view]) view = "audit";
  if (state.office) {
    stopWatch();
    state.office = state.computer = null;
    state.events = [];
  }
  state.ops = { view, params };
  renderDetail();
  renderOffices();
}

function refreshOps() {
  const box = $("#detail .ops");
  if (state.ops && box) opsViews[state.ops.view].refresh(box, opsCtx());
}

// renderOpsNav links the operator views, for an operator key only (the
// gateway refuses their calls to any other).
function renderOpsNav() {
  const nav = $("#ops-nav");
  nav.hidden = !state.operator;
  const active = state.ops?.view;
  if (nav.dataset.active === String(active) && nav.childElementCount) return;
  nav.dataset.active = String(active);
  fill(nav, state.operator ? [el("h2", null, "Gateway"), el("ul", { class: "ops-links" }, Object.entries(opsViews).map(([k, v]) =>
    el("li", null, el("a", { href: `#/ops/${k}`, id: `ops-link-${k}`, class: k === active ? "selected" : "" }, v.title))))] : []);
}

window.addEventListener("hashchange", () => {
  if (state.client && location.hash !== routeOf()) applyRoute(location.hash);
});

// fail shows an error in place; an unauthenticated one signs out.
function fail(where, e) {
  if (e?.name === "AbortError") return;
  if (e instanceof APIError && e.code === "unauthenticated") {
    store.removeItem(KEY);
    showLogin(describe(e, state.client?.agent));
    return;
  }
  if (where) fill(where, el("p", { class: "error" }, describe(e, state.client?.agent)));
}

// ---- offices ----

async function refreshOffices() {
  if (!state.client) return;
  try {
    const res = await state.client.call("ListOffices", {});
    state.offices = res.offices ?? [];
    state.operator = !!res.operator;
    renderOpsNav();
    renderOffices();
  } catch (e) {
    fail($("#offices"), e);
  }
}

// versionOf is the protocol profile office id speaks ("0.2", "0.4"), or "".
function versionOf(id) {
  const listed = state.offices.find((o) => o.office_id === id)?.version;
  return listed || (id === state.office ? state.watchVersion : "") || "";
}

// atLeast compares MAJOR.MINOR versions.
function atLeast(v, want) {
  const [a, b] = (v || "0.0").split(".").map(Number);
  const [c, d] = want.split(".").map(Number);
  return a > c || (a === c && b >= d);
}

function versionBadge(v) {
  return v ? el("span", { class: "version", title: `This office speaks SMCP ${v}` }, `SMCP ${v}`) : null;
}

// Every list of offices and computers is drawn from state.offices here:
// the aside, the start page and the open office's overview. Nothing else of
// the detail pane is touched.
function renderOffices() {
  const list = $("#offices");
  if (state.offices.length === 0) {
    fill(list, el("p", { class: "muted" }, "No office this key may enter has anyone in it yet."));
  } else {
    fill(list, state.offices.map((o) => el("section", { class: `office${o.office_id === state.office ? " selected" : ""}`, "data-office": o.office_id },
      el("h3", null, el("a", { href: "#", onclick: (ev) => { ev.preventDefault(); selectOffice(o.office_id); } }, o.office_id), " ", versionBadge(o.version)),
      agentLine(o),
      el("ul", { class: "computers" }, (o.computers ?? []).map((c) => el("li", null,
        el("a", { href: "#", class: `computer${o.office_id === state.office && c === state.computer ? " selected" : ""}`,
          "data-computer": c, onclick: (ev) => { ev.preventDefault(); selectComputer(o.office_id, c); } }, c)))))));
  }
  renderStartOffices();
  renderOverview();
  renderHead();
}

function agentLine(o) {
  return el("div", { class: "small" }, "agent: ", o.agent ? el("strong", null, o.agent) : el("span", { class: "muted" }, "none joined"),
    o.rpc_agent ? el("span", { class: "muted" }, ` · RPC: ${o.rpc_agent}`) : null);
}

function selectOffice(id) {
  state.ops = null; // an operator view left no office open
  if (state.office !== id) {
    state.office = id;
    state.computer = null;
    state.events = [];
    state.watchVersion = "";
    startWatch(id);
    renderDetail();
  } else if (state.computer) {
    state.computer = null;
    renderDetail();
  }
  renderOffices();
  reveal();
}

function selectComputer(office, computer) {
  state.ops = null;
  if (state.office === office && state.computer === computer) {
    reveal(); // the panels are kept: a second click must not reset them
    return;
  }
  if (state.office !== office) {
    state.office = office;
    state.events = [];
    state.watchVersion = "";
    startWatch(office);
  }
  state.computer = computer;
  state.finder.offset = 0;
  state.reading = null;
  renderDetail();
  renderOffices();
  reveal();
}

// reveal brings the detail pane into view when the panes are stacked (the
// office list is above it).
function reveal() {
  if (narrow.matches) $("#detail").scrollIntoView({ block: "start" });
}

// ---- live: WatchOffice on the selected office ----

function stopWatch() {
  state.watch?.abort();
  state.watch = null;
  state.live = null;
}

// startWatch streams the office's notifications while it is selected. The
// stream holds the office's agent slot (as every RPC does for its length),
// which is why only the selected office is watched.
function startWatch(office) {
  stopWatch();
  const ctl = new AbortController();
  state.watch = ctl;
  (async () => {
    while (!ctl.signal.aborted) {
      try {
        setLive("connecting");
        // The gateway sends its headers once the watch is registered:
        // from then on no notification is missed.
        // The office list then shows the console holding the office (its
        // agent name as the gateway sees it).
        const open = () => { setLive("live"); refreshOffices(); };
        for await (const msg of state.client.stream("WatchOffice", { office_id: office }, ctl.signal, open)) {
          onNotification(msg);
        }
      } catch (e) {
        if (ctl.signal.aborted || e?.name === "AbortError") return;
        if (e instanceof APIError && e.code === "unauthenticated") return fail(null, e);
        setLive("error", describe(e, state.client?.agent));
      }
      await new Promise((r) => setTimeout(r, 3000));
    }
  })();
}

function setLive(status, message) {
  state.live = { status, message };
  const s = $("#live");
  if (!s) return;
  s.className = `live ${status}`;
  s.textContent = status === "live" ? "● live" : status === "connecting" ? "○ connecting…" : `✕ ${message} (retrying)`;
}

// Which panel each update refreshes.
const panelOf = {
  "notify:update_tool_list": "tools",
  "notify:update_desktop": "desktop",
  "notify:update_finder": "finder",
  "notify:update_skills": "skills",
};

function onNotification(msg) {
  if (!msg.event) return; // the headers-only first frame
  if (msg.office_version && msg.office_version !== state.watchVersion) {
    state.watchVersion = msg.office_version;
    renderHead();
  }
  const body = Object.entries(msg).find(([k]) => k !== "event" && k !== "office_version")?.[1] ?? {};
  state.events.unshift({ at: new Date(), event: msg.event, body });
  state.events.length = Math.min(state.events.length, 30);
  renderEvents();
  if (/enter_office|leave_office/.test(msg.event)) refreshOffices();
  const tab = panelOf[msg.event];
  if (tab && body.computer && body.computer === state.computer) refreshPanel(tab);
}

function renderEvents() {
  const box = $("#events");
  if (!box) return;
  fill(box, state.events.length === 0
    ? el("li", { class: "muted" }, "No notification yet.")
    : state.events.map((e) => el("li", null, el("span", { class: "muted" }, stamp(e.at), " "), el("code", null, e.event), " ", JSON.stringify(e.body))));
}

// ---- detail: start page, office overview, computer tabs ----

function tabsFor() {
  const tabs = ["tools", "desktop", "finder"];
  if (atLeast(versionOf(state.office), "0.3")) tabs.push("skills");
  return tabs;
}

function renderDetail() {
  const d = $("#detail");
  state.panels = new Map();
  renderOpsNav();
  syncRoute();
  if (state.ops) {
    const box = el("div", { class: "ops", id: `ops-${state.ops.view}` });
    fill(d, box);
    opsViews[state.ops.view].render(box, opsCtx(), state.ops.params);
    return;
  }
  if (!state.office) {
    renderStart(d);
    return;
  }
  fill(d,
    el("div", { class: "detail-head" },
      el("h2", null, state.office, state.computer ? ` / ${state.computer}` : ""),
      el("span", { id: "office-version" }),
      el("span", { id: "live", class: "live" }, "")),
    state.computer
      ? [el("nav", { class: "tabs", id: "tabs" }), el("div", { id: "tab-body" })]
      : [el("div", { id: "overview" }), state.operator ? [el("div", { id: "office-signins" }), el("div", { id: "office-connections" })] : null],
    el("h3", null, "Notifications"),
    el("ul", { id: "events", class: "events" }));
  renderEvents();
  if (state.live) setLive(state.live.status, state.live.message);
  renderHead();
  if (state.computer) showTab(state.tab);
  else {
    renderOverview();
    refreshOfficeConnections();
  }
}

// refreshOfficeConnections shows an operator who holds the open office's
// seat and who else is in it or watches it, on every node: the console's
// own watch included; and the sign-ins its computers wait for.
async function refreshOfficeConnections() {
  refreshOfficeSignIns();
  const box = $("#office-connections");
  if (!box || !state.office) return;
  const current = latest(box);
  try {
    const res = await state.client.call("ListConnections", { office: state.office });
    if (!current()) return;
    const cs = res.connections ?? [];
    fill(box, el("h3", null, "Seat and connections"),
      cs.length === 0 ? el("p", { class: "muted" }, "Nobody.") : connectionsTable(cs, { office: false }));
  } catch (e) {
    if (current()) fail(box, e);
  }
}

// refreshOfficeSignIns shows an operator the sign-ins to MCP servers the
// office's headless computers wait for, each with its authorization link
// (ListSignIns: operator keys only; agents never see these URLs). The
// link's callback comes back to the gateway, which hands it to the
// computer. Nothing is shown while none waits.
async function refreshOfficeSignIns() {
  const box = $("#office-signins");
  if (!box || !state.office) return;
  const current = latest(box);
  try {
    const res = await state.client.call("ListSignIns", { office: state.office });
    if (!current()) return;
    const sis = res.sign_ins ?? [];
    fill(box, sis.length === 0 ? null : [el("h3", null, "Sign-ins needed"),
      el("ul", { class: "signins" }, sis.map((s) => el("li", { class: "signin", "data-computer": s.computer, "data-server": s.server },
        `Sign-in needed for server ${s.server} on computer ${s.computer}: `,
        el("a", { href: s.url, target: "_blank", rel: "noopener noreferrer" }, "sign in"),
        el("span", { class: "muted" }, ` (until ${new Date(s.expires_at).toLocaleTimeString()})`))))]);
  } catch (e) {
    if (current()) fail(box, e);
  }
}

// renderHead updates the office's version and the tabs it allows, in place.
function renderHead() {
  const v = $("#office-version");
  if (v) fill(v, versionBadge(versionOf(state.office)));
  const nav = $("#tabs");
  if (!nav) return;
  const tabs = tabsFor();
  if (!tabs.includes(state.tab)) {
    showTab("tools"); // the office's version no longer has this tab
    return;
  }
  if (nav.dataset.tabs === tabs.join() && nav.dataset.active === state.tab) return;
  nav.dataset.tabs = tabs.join();
  nav.dataset.active = state.tab;
  fill(nav, tabs.map((t) => el("button", { type: "button", id: `tab-${t}`, class: t === state.tab ? "active" : "",
    onclick: () => showTab(t) }, t[0].toUpperCase() + t.slice(1))));
}

// renderStart is the page before an office is chosen: what to do, and the
// offices there are (kept current by renderOffices).
function renderStart(d) {
  fill(d, el("div", { id: "start", class: "start" },
    el("h2", null, "Start here"),
    el("ol", { class: "steps" },
      el("li", null, "Choose an office: those this API key may enter and that have someone in them are listed below and in the ",
        el("strong", null, "Offices"), " pane."),
      el("li", null, "Choose one of its computers to see its tools (call one from a form made from its schema), its desktop, its Finder and, in SMCP 0.3+ offices, its skills."),
      el("li", null, "While an office is open, its notifications arrive live, and lists refresh in place.")),
    el("h3", null, "Offices available"),
    el("div", { id: "start-offices", class: "cards" }),
    el("p", { class: "small muted" }, "The list refreshes every 5 seconds. An office appears once a computer or an agent joins it, e.g. ",
      el("code", null, "smcp computer --config examples/computer.yaml --office demo --name my-pc"), ".")));
  renderStartOffices();
}

function renderStartOffices() {
  const box = $("#start-offices");
  if (!box) return;
  fill(box, state.offices.length === 0
    ? el("p", { class: "muted" }, "None yet: no office this key may enter has anyone in it.")
    : state.offices.map((o) => el("section", { class: "card", "data-office": o.office_id },
      el("h3", null, el("a", { href: "#", class: "start-office", onclick: (ev) => { ev.preventDefault(); selectOffice(o.office_id); } }, o.office_id),
        " ", versionBadge(o.version)),
      agentLine(o),
      computerButtons(o))));
}

function computerButtons(o) {
  const cs = o.computers ?? [];
  return cs.length === 0
    ? el("p", { class: "small muted" }, "No computer in it.")
    : el("div", { class: "chips" }, cs.map((c) => el("button", { type: "button", class: "chip", "data-computer": c,
      onclick: () => selectComputer(o.office_id, c) }, c)));
}

// renderOverview is the open office without a chosen computer.
function renderOverview() {
  const box = $("#overview");
  if (!box) return;
  const o = state.offices.find((x) => x.office_id === state.office);
  fill(box, o
    ? [agentLine(o), evictButton(o), el("p", null, "Choose one of the office's computers:"), computerButtons(o)]
    : el("p", { class: "muted" }, "This office is not listed (any more): nobody is in it, or this key may not enter it."));
}

// evictButton frees the office's agent seat (EvictAgent): shown to an
// operator key only, the one key the gateway lets evict. The console's own
// watch of the office holds the seat too, and is evicted with the rest.
function evictButton(o) {
  if (!state.operator) return null;
  // The overview is redrawn at each refresh: the outcome is kept in state.
  const said = state.evicted?.office === o.office_id ? state.evicted.text : "";
  const out = el("span", { id: "evict-result", class: "small" }, said);
  const b = el("button", { type: "button", id: "evict-agent", onclick: async () => {
    b.disabled = true;
    let text;
    try {
      const res = await state.client.call("EvictAgent", { office_id: o.office_id });
      const held = (res.holders ?? []).map((h) => `${h.agent} (${h.front} since ${h.since})`);
      text = held.length ? `Evicted: ${held.join(", ")}` : "The seat was free.";
    } catch (e) {
      text = describe(e, state.client?.agent);
    } finally {
      b.disabled = false;
    }
    state.evicted = { office: o.office_id, text };
    fill(out, text);
    refreshOffices();
  } }, "Evict agent");
  return el("p", null, b, " ", out);
}

function addr() {
  return { office_id: state.office, computer: state.computer };
}

// Each tab: open builds its panel (once per computer), refresh updates its
// lists in place after a live update.
const kinds = {
  tools: { open: openTools, refresh: refreshTools },
  desktop: { open: openDesktop, refresh: loadDesktop },
  finder: { open: openFinder, refresh: refreshFinder },
  skills: { open: (p) => renderSkills(p, skillsCtx()), refresh: (p) => refreshSkills(p, skillsCtx()) },
};

function showTab(t) {
  if (!tabsFor().includes(t)) t = "tools";
  state.tab = t;
  renderHead();
  const body = $("#tab-body");
  if (!body) return;
  let p = state.panels.get(t);
  if (!p) {
    p = { node: el("div", { class: "panel", id: `panel-${t}` }), stale: false };
    state.panels.set(t, p);
    body.append(p.node);
    kinds[t].open(p.node);
  } else if (p.stale) {
    p.stale = false;
    kinds[t].refresh(p.node);
  }
  for (const [k, q] of state.panels) q.node.hidden = k !== t;
  syncRoute();
}

// refreshPanel refreshes tab's lists now if it is shown, else when it is.
function refreshPanel(t) {
  const p = state.panels.get(t);
  if (!p) return; // not opened yet: it loads when it is
  if (t === state.tab) kinds[t].refresh(p.node);
  else p.stale = true;
}

// ---- tools ----

function openTools(panel) {
  fill(panel, el("div", { class: "split" },
    el("ul", { class: "tools", id: "tools-list" }, el("li", { class: "muted" }, "Loading tools…")),
    el("div", { id: "tool-pane" }, el("p", { class: "muted" }, "Choose a tool."))));
  refreshTools(panel, true);
}

async function refreshTools(panel, first = false) {
  const list = panel.querySelector("#tools-list");
  const current = latest(list);
  try {
    const res = await state.client.call("GetTools", addr());
    if (!current()) return;
    const tools = res.tools ?? [];
    fill(list, tools.length === 0 ? el("li", { class: "muted" }, "This computer offers no tools.") : tools.map((t) => el("li", null,
      el("a", { href: "#", class: "tool", "data-tool": t.name, onclick: (ev) => { ev.preventDefault(); openTool(t); } }, t.name),
      t.bundle_id ? el("div", { class: "small muted" }, `server ${t.bundle_id}`) : null,
      el("div", { class: "small muted" }, t.description ?? ""))));
    if (!first) list.dataset.refreshed = String(Number(list.dataset.refreshed ?? 0) + 1);
    // The open tool stays open; say so when the computer dropped it.
    const pane = panel.querySelector("#tool-pane");
    const open = pane.dataset.tool;
    const gone = pane.querySelector(".gone");
    if (open && !tools.some((t) => t.name === open)) {
      if (!gone) pane.prepend(el("p", { class: "gone notice" }, "The computer no longer offers this tool."));
    } else gone?.remove();
  } catch (e) {
    if (current()) fail(first ? panel : list, e);
  }
}

function openTool(tool) {
  const pane = $("#tool-pane");
  const result = el("div", { id: "tool-result" });
  // The computer and office that mint a result's blob handles.
  const at = addr();
  const form = buildForm(tool.params_schema ?? {}, async (values, timeout) => {
    let params;
    try {
      params = values();
    } catch (e) {
      fill(result, el("p", { class: "error" }, e.message));
      return;
    }
    fill(result, el("p", { class: "muted" }, "Calling…"));
    try {
      const res = await state.client.call("CallTool", { ...at, tool_name: tool.name, params, ...(timeout ? { timeout } : {}) });
      fill(result, el("p", { class: "small muted" }, "answered ", stamp(new Date())),
        renderResult(res.result ?? {}, openURI, (b) => downloadButton(() => state.client, at, b.handle, fileName(b))));
    } catch (e) {
      fail(result, e);
    }
  });
  pane.dataset.tool = tool.name;
  fill(pane, el("h3", null, tool.name), el("p", { class: "small" }, tool.description ?? ""), form, result);
}

// ---- desktop ----

function openDesktop(panel) {
  fill(panel, el("div", { id: "desktop" }, el("p", { class: "muted" }, "Loading desktop…")));
  loadDesktop(panel);
}

async function loadDesktop(panel) {
  const box = panel.querySelector("#desktop");
  const current = latest(box);
  try {
    const res = await state.client.call("GetDesktop", addr());
    if (!current()) return;
    const wins = res.desktops ?? [];
    // The gateway answers the windows already organized: highest priority first.
    fill(box, wins.length === 0 ? el("p", { class: "muted" }, "No window.") :
      el("ol", { class: "windows" }, wins.map((w, i) => {
        const cut = w.indexOf("\n\n");
        const uri = cut < 0 ? w : w.slice(0, cut);
        return el("li", { class: "window", "data-rank": i + 1 },
          el("div", { class: "window-title" }, el("span", { class: "muted" }, `#${i + 1} `), el("code", null, uri)),
          cut < 0 ? null : el("pre", { class: "text" }, w.slice(cut + 2)));
      })),
    el("p", { class: "small muted" }, "as of ", stamp(new Date())));
  } catch (e) {
    if (current()) fail(box, e);
  }
}

// ---- finder ----

const fileTypes = ["", "csv", "json", "md", "pdf", "tsv", "txt", "xlsx"];

function openFinder(panel) {
  const f = state.finder;
  const kw = el("input", { id: "finder-keywords", type: "search", value: f.keywords, placeholder: "keywords, space separated" });
  const ft = el("select", { id: "finder-type" }, fileTypes.map((t) => el("option", { value: t, selected: t === f.fileType }, t || "any type")));
  const size = el("select", { id: "finder-limit" }, [5, 10, 20, 50, 100].map((n) => el("option", { value: n, selected: n === f.limit }, `${n} per page`)));
  const form = el("form", { class: "finder-form", method: "post", onsubmit: (ev) => {
    ev.preventDefault();
    Object.assign(f, { keywords: kw.value.trim(), fileType: ft.value, limit: Number(size.value), offset: 0 });
    loadDocuments();
  } }, kw, ft, size, el("button", { type: "submit", id: "finder-search" }, "Filter"));
  fill(panel, form, el("div", { id: "finder-results" }), el("div", { id: "reader" }));
  loadDocuments();
}

// refreshFinder follows a live update: the documents list is reloaded in
// place (same filter and page); the document being read stays, marked as
// possibly changed with a way to read it again.
function refreshFinder(panel) {
  loadDocuments({ quiet: true });
  const reader = panel.querySelector("#reader");
  if (state.reading && reader && !reader.querySelector(".stale")) {
    const uri = state.reading;
    reader.prepend(el("p", { class: "stale notice small", id: "reader-stale" }, "The computer's documents changed since this was read. ",
      el("button", { type: "button", class: "link", onclick: () => openURI(uri) }, "Read it again")));
  }
}

async function loadDocuments({ quiet = false } = {}) {
  const out = $("#finder-results");
  if (!out) return;
  const f = state.finder;
  const req = { ...addr(), offset: f.offset, limit: f.limit };
  if (f.keywords) req.keywords = f.keywords.split(/[\s,]+/).filter(Boolean);
  if (f.fileType) req.file_type = f.fileType;
  const current = latest(out);
  // A live refresh keeps the old list on screen until the new one is in.
  if (!quiet) fill(out, el("p", { class: "muted" }, "Loading documents…"));
  try {
    const res = await state.client.call("GetFinder", req);
    if (!current()) return;
    const docs = res.documents ?? [];
    const total = res.total_count ?? 0;
    const first = total === 0 ? 0 : f.offset + 1;
    const last = f.offset + docs.length;
    if (quiet) out.dataset.refreshed = String(Number(out.dataset.refreshed ?? 0) + 1);
    fill(out,
      el("div", { class: "scroll-x" }, el("table", { class: "docs" },
        el("thead", null, el("tr", null, ["title", "type", "pages", "modified", "keywords"].map((h) => el("th", { class: `col-${h}` }, h)))),
        el("tbody", null, docs.map((d) => el("tr", { class: "doc", "data-doc-ref": d.doc_ref },
          el("td", { class: "col-title" }, el("a", { href: "#", onclick: (ev) => { ev.preventDefault(); openURI(d.uri); } }, d.title || d.doc_ref),
            d.summary ? el("div", { class: "small muted" }, d.summary) : null),
          el("td", { class: "col-type" }, d.file_type), el("td", { class: "col-pages" }, d.page_count ?? 0),
          el("td", { class: "col-modified small" }, stamp(d.last_modified)),
          el("td", { class: "col-keywords small" }, (d.keywords ?? []).join(", "))))))),
      el("div", { class: "pager" },
        el("button", { type: "button", id: "finder-prev", disabled: f.offset === 0, onclick: () => { f.offset = Math.max(0, f.offset - f.limit); loadDocuments(); } }, "‹ Previous"),
        el("span", { id: "finder-range" }, `${first}–${last} of ${total}`),
        el("button", { type: "button", id: "finder-next", disabled: last >= total, onclick: () => { f.offset += f.limit; loadDocuments(); } }, "Next ›"),
        quiet ? el("span", { class: "small muted", id: "finder-updated" }, "updated live ", stamp(new Date())) : null));
  } catch (e) {
    if (current()) fail(out, e);
  }
}

// openURI reads a dpe:// URI through the computer: a document (level 1, with
// its pages), a page (level 2, its elements) or an element (level 3).
async function openURI(uri) {
  if (state.tab !== "finder") showTab("finder");
  const reader = $("#reader");
  if (!reader) return;
  const path = uri.replace(/\?.*$/, "");
  const level = /\/pages\/\d+$/.test(path) ? 2 : /\/elements\/[^/]+$/.test(path) ? 3 : 1;
  const read = level === 1 ? `${path}?depth=pages` : path;
  state.reading = uri;
  const current = latest(reader);
  fill(reader, el("p", { class: "muted" }, `Reading ${read}…`));
  reader.scrollIntoView({ block: "nearest" });
  try {
    const res = await state.client.call("ReadResource", { ...addr(), uri: read });
    if (!current()) return;
    const c = (res.contents ?? [])[0] ?? {};
    let data;
    try {
      data = JSON.parse(c.text ?? "");
    } catch {
      fill(reader, el("code", null, read), el("pre", { class: "text" }, c.text ?? "(no text)"));
      return;
    }
    fill(reader, level === 1 ? renderDocument(data) : level === 2 ? renderPage(data) : renderElement(data, true));
  } catch (e) {
    if (current()) fail(reader, e);
  }
}

function renderDocument(d) {
  return el("article", { class: "document", "data-doc-ref": d.doc_ref },
    el("h3", null, d.title ?? d.doc_ref),
    el("p", { class: "small muted" }, `${d.file_type} · ${d.page_count} page(s) · `,
      d.last_modified ? ["modified ", stamp(d.last_modified), " · "] : null, el("code", null, d.uri)),
    d.summary ? el("p", null, d.summary) : null,
    el("ol", { class: "pages", start: 0 }, (d.pages ?? []).map((p) => el("li", null,
      el("a", { href: "#", class: "page-link", "data-page": p.page_index, onclick: (ev) => { ev.preventDefault(); openURI(p.uri); } }, p.title || `page ${p.page_index}`),
      el("span", { class: "small muted" }, ` ${p.element_count} element(s)`)))));
}

function renderPage(p) {
  const doc = p.uri?.replace(/\/pages\/\d+$/, "");
  return el("article", { class: "page", "data-page": p.page_index },
    el("p", { class: "small" }, doc ? el("a", { href: "#", onclick: (ev) => { ev.preventDefault(); openURI(doc); } }, "‹ the document") : null,
      " ", el("code", null, p.uri)),
    el("h3", null, `Page ${p.page_index}: ${p.title ?? ""}`),
    (p.elements ?? []).map((e) => renderElement(e, false)),
    p.element_count > (p.elements ?? []).length ? el("p", { class: "muted" }, `${p.elements.length} of ${p.element_count} elements shown.`) : null);
}

// renderElement shows one element by category: tables as tables, headings and
// text as text, the rest as a tree.
function renderElement(e, full) {
  const c = e.content ?? {};
  let body;
  if (e.category === "table" && Array.isArray(c.rows)) body = el("div", { class: "scroll-x" }, table(c.headers, c.rows, "dpe-table"));
  else if (e.category === "heading" && c.text != null) body = el("h4", null, c.text);
  else if (typeof c.text === "string" && Object.keys(c).every((k) => ["text", "url", "level"].includes(k))) {
    body = el("p", { class: "text" }, c.text, c.url ? [" ", el("code", null, c.url)] : null);
  } else body = tree(c, { open: 1 });
  const uri = e.uri;
  return el("section", { class: `element cat-${e.category}`, "data-element": e.element_id },
    el("div", { class: "element-head small muted" }, el("span", { class: "badge" }, e.category), ` ${e.element_id}`,
      !full && e.summary && e.category === "table" ? ` · ${e.summary}` : "",
      uri ? [" ", el("code", null, uri)] : null),
    body,
    full && e.metadata ? el("details", null, el("summary", null, "metadata"), tree(e.metadata)) : null);
}

// ---- skills (skills.js) ----

function skillsCtx() {
  return { client: () => state.client, addr: addr(), fail };
}

// ---- start ----

const saved = store.getItem(KEY);
if (saved) {
  signIn(saved, store.getItem(AGENT) ?? "").catch((e) => {
    store.removeItem(KEY);
    showLogin(describe(e, store.getItem(AGENT) ?? ""));
  });
} else {
  showLogin("");
}
