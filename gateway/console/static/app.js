// The SMCP web console: the offices an API key may see, their agents and
// computers live, a computer's tools (with forms from their schemas), desktop
// and finder, and the gateway's own figures. It talks to the gateway only
// through its public Connect API; the key lives in sessionStorage and in
// request headers, never in a URL.

import { APIError, Client, describe } from "./api.js";
import { el, fill, table, tree } from "./dom.js";
import { buildForm } from "./form.js";
import { renderResult } from "./result.js";
import { Metrics } from "./metrics.js";

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
  watch: null, // AbortController of the WatchOffice stream
  events: [],
  finder: { keywords: "", fileType: "", offset: 0, limit: 10 },
};

const metrics = new Metrics($("#metrics"));

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
  metrics.start();
  await refreshOffices();
  clearInterval(state.poll);
  // ListOffices holds no office, so polling it keeps no agent out.
  state.poll = setInterval(() => refreshOffices().catch(() => {}), 5000);
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
  state.office = state.computer = null;
  state.tab = "tools";
  state.finder = { keywords: "", fileType: "", offset: 0, limit: 10 };
  showLogin("");
});

// fail shows an error in place; an unauthenticated one signs out.
function fail(where, e) {
  if (e?.name === "AbortError") return;
  if (e instanceof APIError && e.code === "unauthenticated") {
    store.removeItem(KEY);
    showLogin(describe(e, state.client?.agent));
    return;
  }
  fill(where, el("p", { class: "error" }, describe(e, state.client?.agent)));
}

// ---- offices ----

async function refreshOffices() {
  if (!state.client) return;
  try {
    const res = await state.client.call("ListOffices", {});
    state.offices = res.offices ?? [];
    renderOffices();
  } catch (e) {
    fail($("#offices"), e);
  }
}

function renderOffices() {
  const list = $("#offices");
  if (state.offices.length === 0) {
    fill(list, el("p", { class: "muted" }, "No office this key may enter has anyone in it yet."));
    return;
  }
  fill(list, state.offices.map((o) => el("section", { class: `office${o.office_id === state.office ? " selected" : ""}`, "data-office": o.office_id },
    el("h3", null, el("a", { href: "#", onclick: (ev) => { ev.preventDefault(); selectOffice(o.office_id); } }, o.office_id)),
    el("div", { class: "small" }, "agent: ", o.agent ? el("strong", null, o.agent) : el("span", { class: "muted" }, "none joined"),
      o.rpc_agent ? el("span", { class: "muted" }, ` · RPC: ${o.rpc_agent}`) : null),
    el("ul", { class: "computers" }, (o.computers ?? []).map((c) => el("li", null,
      el("a", { href: "#", class: `computer${o.office_id === state.office && c === state.computer ? " selected" : ""}`,
        "data-computer": c, onclick: (ev) => { ev.preventDefault(); selectComputer(o.office_id, c); } }, c)))))));
}

function selectOffice(id) {
  if (state.office !== id) {
    state.office = id;
    state.computer = null;
    state.events = [];
    startWatch(id);
  }
  renderOffices();
  renderDetail();
}

function selectComputer(office, computer) {
  selectOffice(office);
  state.computer = computer;
  state.finder.offset = 0;
  renderOffices();
  renderDetail();
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

function onNotification(msg) {
  if (!msg.event) return; // the headers-only first frame
  const body = Object.entries(msg).find(([k]) => k !== "event")?.[1] ?? {};
  state.events.unshift({ at: new Date().toLocaleTimeString(), event: msg.event, body });
  state.events.length = Math.min(state.events.length, 30);
  renderEvents();
  if (/enter_office|leave_office/.test(msg.event)) refreshOffices();
  if (body.computer && body.computer === state.computer) {
    const tab = { "notify:update_tool_list": "tools", "notify:update_desktop": "desktop", "notify:update_finder": "finder" }[msg.event];
    if (tab === state.tab) renderTab();
  }
}

function renderEvents() {
  const box = $("#events");
  if (!box) return;
  fill(box, state.events.length === 0
    ? el("li", { class: "muted" }, "No notification yet.")
    : state.events.map((e) => el("li", null, el("span", { class: "muted" }, e.at, " "), el("code", null, e.event), " ", JSON.stringify(e.body))));
}

// ---- detail: office and computer ----

function renderDetail() {
  const d = $("#detail");
  if (!state.office) {
    fill(d, el("p", { class: "muted" }, "Choose an office or a computer."));
    return;
  }
  const tabs = ["tools", "desktop", "finder"];
  fill(d,
    el("div", { class: "detail-head" },
      el("h2", null, state.office, state.computer ? ` / ${state.computer}` : ""),
      el("span", { id: "live", class: "live" }, "")),
    state.computer
      ? [el("nav", { class: "tabs" }, tabs.map((t) => el("button", { type: "button", id: `tab-${t}`, class: t === state.tab ? "active" : "",
          onclick: () => { state.tab = t; renderDetail(); } }, t[0].toUpperCase() + t.slice(1)))),
        el("div", { id: "tab-body" })]
      : el("p", { class: "muted" }, "Choose one of the office's computers."),
    el("h3", null, "Notifications"),
    el("ul", { id: "events", class: "events" }));
  renderEvents();
  if (state.live) setLive(state.live.status, state.live.message);
  if (state.computer) renderTab();
}

function addr() {
  return { office_id: state.office, computer: state.computer };
}

function renderTab() {
  const body = $("#tab-body");
  if (!body) return;
  ({ tools: renderTools, desktop: renderDesktop, finder: renderFinder })[state.tab](body);
}

// ---- tools ----

async function renderTools(body) {
  fill(body, el("p", { class: "muted" }, "Loading tools…"));
  try {
    const res = await state.client.call("GetTools", addr());
    const tools = res.tools ?? [];
    fill(body,
      el("div", { class: "split" },
        el("ul", { class: "tools" }, tools.map((t) => el("li", null,
          el("a", { href: "#", class: "tool", "data-tool": t.name, onclick: (ev) => { ev.preventDefault(); openTool(t); } }, t.name),
          el("div", { class: "small muted" }, t.description ?? "")))),
        el("div", { id: "tool-pane" }, el("p", { class: "muted" }, tools.length ? "Choose a tool." : "This computer offers no tools."))));
  } catch (e) {
    fail(body, e);
  }
}

function openTool(tool) {
  const pane = $("#tool-pane");
  const result = el("div", { id: "tool-result" });
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
      const res = await state.client.call("CallTool", { ...addr(), tool_name: tool.name, params, ...(timeout ? { timeout } : {}) });
      fill(result, renderResult(res.result ?? {}, openURI));
    } catch (e) {
      fail(result, e);
    }
  });
  fill(pane, el("h3", null, tool.name), el("p", { class: "small" }, tool.description ?? ""), form, result);
}

// ---- desktop ----

async function renderDesktop(body) {
  fill(body, el("p", { class: "muted" }, "Loading desktop…"));
  try {
    const res = await state.client.call("GetDesktop", addr());
    const wins = res.desktops ?? [];
    // The gateway answers the windows already organized: highest priority first.
    fill(body, wins.length === 0 ? el("p", { class: "muted" }, "No window.") :
      el("ol", { class: "windows" }, wins.map((w, i) => {
        const cut = w.indexOf("\n\n");
        const uri = cut < 0 ? w : w.slice(0, cut);
        return el("li", { class: "window", "data-rank": i + 1 },
          el("div", { class: "window-title" }, el("span", { class: "muted" }, `#${i + 1} `), el("code", null, uri)),
          cut < 0 ? null : el("pre", { class: "text" }, w.slice(cut + 2)));
      })));
  } catch (e) {
    fail(body, e);
  }
}

// ---- finder ----

const fileTypes = ["", "csv", "json", "md", "pdf", "tsv", "txt", "xlsx"];

function renderFinder(body) {
  const f = state.finder;
  const kw = el("input", { id: "finder-keywords", type: "search", value: f.keywords, placeholder: "keywords, space separated" });
  const ft = el("select", { id: "finder-type" }, fileTypes.map((t) => el("option", { value: t, selected: t === f.fileType }, t || "any type")));
  const size = el("select", { id: "finder-limit" }, [5, 10, 20, 50, 100].map((n) => el("option", { value: n, selected: n === f.limit }, `${n} per page`)));
  const form = el("form", { class: "finder-form", method: "post", onsubmit: (ev) => {
    ev.preventDefault();
    Object.assign(f, { keywords: kw.value.trim(), fileType: ft.value, limit: Number(size.value), offset: 0 });
    loadDocuments();
  } }, kw, ft, size, el("button", { type: "submit", id: "finder-search" }, "Filter"));
  fill(body, form, el("div", { id: "finder-results" }), el("div", { id: "reader" }));
  loadDocuments();
}

async function loadDocuments() {
  const out = $("#finder-results");
  const f = state.finder;
  const req = { ...addr(), offset: f.offset, limit: f.limit };
  if (f.keywords) req.keywords = f.keywords.split(/[\s,]+/).filter(Boolean);
  if (f.fileType) req.file_type = f.fileType;
  fill(out, el("p", { class: "muted" }, "Loading documents…"));
  try {
    const res = await state.client.call("GetFinder", req);
    const docs = res.documents ?? [];
    const total = res.total_count ?? 0;
    const first = total === 0 ? 0 : f.offset + 1;
    const last = f.offset + docs.length;
    fill(out,
      el("table", { class: "docs" },
        el("thead", null, el("tr", null, ["title", "type", "pages", "modified", "keywords"].map((h) => el("th", null, h)))),
        el("tbody", null, docs.map((d) => el("tr", { class: "doc", "data-doc-ref": d.doc_ref },
          el("td", null, el("a", { href: "#", onclick: (ev) => { ev.preventDefault(); openURI(d.uri); } }, d.title || d.doc_ref),
            d.summary ? el("div", { class: "small muted" }, d.summary) : null),
          el("td", null, d.file_type), el("td", null, d.page_count ?? 0),
          el("td", { class: "small" }, d.last_modified ?? ""), el("td", { class: "small" }, (d.keywords ?? []).join(", ")))))),
      el("div", { class: "pager" },
        el("button", { type: "button", id: "finder-prev", disabled: f.offset === 0, onclick: () => { f.offset = Math.max(0, f.offset - f.limit); loadDocuments(); } }, "‹ Previous"),
        el("span", { id: "finder-range" }, `${first}–${last} of ${total}`),
        el("button", { type: "button", id: "finder-next", disabled: last >= total, onclick: () => { f.offset += f.limit; loadDocuments(); } }, "Next ›")));
  } catch (e) {
    fail(out, e);
  }
}

// openURI reads a dpe:// URI through the computer: a document (level 1, with
// its pages), a page (level 2, its elements) or an element (level 3).
async function openURI(uri) {
  if (state.tab !== "finder") {
    state.tab = "finder";
    renderDetail();
  }
  const reader = $("#reader");
  const path = uri.replace(/\?.*$/, "");
  const level = /\/pages\/\d+$/.test(path) ? 2 : /\/elements\/[^/]+$/.test(path) ? 3 : 1;
  const read = level === 1 ? `${path}?depth=pages` : path;
  fill(reader, el("p", { class: "muted" }, `Reading ${read}…`));
  reader.scrollIntoView({ block: "nearest" });
  try {
    const res = await state.client.call("ReadResource", { ...addr(), uri: read });
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
    fail(reader, e);
  }
}

function renderDocument(d) {
  return el("article", { class: "document", "data-doc-ref": d.doc_ref },
    el("h3", null, d.title ?? d.doc_ref),
    el("p", { class: "small muted" }, `${d.file_type} · ${d.page_count} page(s) · `, el("code", null, d.uri)),
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
  if (e.category === "table" && Array.isArray(c.rows)) body = table(c.headers, c.rows, "dpe-table");
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
