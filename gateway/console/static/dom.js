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

// clear empties a node and appends children.
export function fill(node, ...children) {
  node.replaceChildren();
  for (const c of children.flat(Infinity)) if (c != null && c !== false) node.append(c);
  return node;
}
