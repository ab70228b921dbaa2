// DOM helpers. Everything from the gateway is inserted as text (never as
// HTML), so a document or a tool result cannot run script in the console.

// el builds an element: attributes ("on..." become listeners, class, data-*)
// and children (nodes or text; null and false are skipped).
export function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v == null || v === false) continue;
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (k === "class") e.className = v;
    else if (v === true) e.setAttribute(k, "");
    else e.setAttribute(k, String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c != null && c !== false) e.append(c instanceof Node ? c : String(c));
  }
  return e;
}

// svg builds an SVG element.
export function svg(tag, attrs, ...children) {
  const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs ?? {})) e.setAttribute(k, String(v));
  for (const c of children.flat()) if (c != null) e.append(c);
  return e;
}

// tree renders any JSON value as a collapsible tree (<details>). Strings
// that are dpe:// URIs become links handled by onURI.
export function tree(value, { label = "", open = 1, onURI } = {}) {
  const scalar = (v) => {
    if (v === null) return el("span", { class: "j-null" }, "null");
    if (typeof v === "string") {
      if (onURI && /^dpe:\/\//.test(v)) {
        return el("a", { href: "#", class: "j-uri", onclick: (ev) => { ev.preventDefault(); onURI(v); } }, v);
      }
      return el("span", { class: "j-str" }, JSON.stringify(v));
    }
    return el("span", { class: `j-${typeof v}` }, String(v));
  };
  const node = (v, key, depth) => {
    const name = key === "" ? null : el("span", { class: "j-key" }, `${key}: `);
    if (v === null || typeof v !== "object") return el("div", { class: "j-leaf" }, name, scalar(v));
    const entries = Array.isArray(v) ? v.map((x, i) => [String(i), x]) : Object.entries(v);
    const summary = Array.isArray(v) ? `[${v.length}]` : `{${entries.length}}`;
    return el("details", { class: "j-node", open: depth < open },
      el("summary", null, name, el("span", { class: "j-count" }, summary)),
      entries.map(([k, x]) => node(x, k, depth + 1)));
  };
  return el("div", { class: "tree" }, node(value, label, 0));
}

// table renders headers and rows as an HTML table.
export function table(headers, rows, cls = "") {
  return el("table", { class: cls },
    headers?.length ? el("thead", null, el("tr", null, headers.map((h) => el("th", null, cellText(h))))) : null,
    el("tbody", null, (rows ?? []).map((r) => el("tr", null, (Array.isArray(r) ? r : [r]).map((c) => el("td", null, cellText(c)))))));
}

function cellText(c) {
  return c == null ? "" : typeof c === "object" ? JSON.stringify(c) : String(c);
}

// fill empties a node and appends children.
export function fill(node, ...children) {
  node.replaceChildren();
  for (const c of children.flat(Infinity)) if (c != null && c !== false) node.append(c);
  return node;
}

// stamp shows a time in the console's one format, local
// "YYYY-MM-DD HH:MM:SS", with the full ISO 8601 text in its tooltip (the
// value as the gateway sent it when that was a string, else UTC). A value
// that is not a time is shown as it came.
export function stamp(value) {
  const d = value instanceof Date ? value : new Date(value ?? NaN);
  if (value == null || value === "" || Number.isNaN(d.getTime())) return el("span", null, value ?? "");
  const iso = typeof value === "string" ? value : d.toISOString();
  return el("time", { datetime: d.toISOString(), title: iso }, localTime(d));
}

// localTime formats d as local "YYYY-MM-DD HH:MM:SS".
export function localTime(d) {
  const p = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

// latest starts a load into node and returns a check that is true while it
// is the node's newest: a live refresh may overtake an earlier one, whose
// late answer must not overwrite the newer.
export function latest(node) {
  const n = (node.loads = (node.loads ?? 0) + 1);
  return () => node.loads === n;
}

// bytes formats a size for people (1536 → "1.5 KiB").
export function bytes(n) {
  n = Number(n);
  if (!Number.isFinite(n)) return "";
  const units = ["B", "KiB", "MiB", "GiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return i === 0 ? `${n} B` : `${n.toFixed(1)} ${units[i]}`;
}
