// The Skills tab (SMCP 0.3+ offices): a computer's skills (GetSkills), one
// skill's files listed and read with GetSkill (SKILL.md first; the text
// inline, or a blob handle read with ReadBlob), and each file downloadable.
//
// The protocol has no listing of a skill's files. A skill an MCP server
// serves file by file has them as its resources (skill://host/skill/<path>,
// GetResources of that server); for another skill the console lists the
// files its SKILL.md names, and any other path can be typed in.

import { bytes, el, fill, latest, tree } from "./dom.js";
import { downloadButton, readBlob, save } from "./blob.js";

// ctx: client() gives the signed-in client; addr is the computer's
// {office_id, computer}; fail(node, err) shows an error in node.

// renderSkills builds the tab: the list, and the pane of the open skill.
export function renderSkills(panel, ctx) {
  fill(panel, el("div", { class: "split" },
    el("ul", { class: "skills", id: "skills-list" }, el("li", { class: "muted" }, "Loading skills…")),
    el("div", { id: "skill-pane" }, el("p", { class: "muted" }, "Choose a skill to read its SKILL.md and its other files."))));
  refreshSkills(panel, ctx, true);
}

// refreshSkills reloads the list in place; the open skill stays open.
export async function refreshSkills(panel, ctx, first = false) {
  const list = panel.querySelector("#skills-list");
  const current = latest(list);
  try {
    const res = await ctx.client().call("GetSkills", ctx.addr);
    if (!current()) return;
    const skills = res.skills ?? [];
    fill(list, skills.length === 0 ? el("li", { class: "muted" }, "This computer offers no skills.") : skills.map((s) => el("li", null,
      el("a", { href: "#", class: "skill", "data-skill": s.name, onclick: (ev) => { ev.preventDefault(); openSkill(panel, ctx, s); } }, s.name),
      s.description ? el("div", { class: "small muted" }, s.description) : null,
      el("div", { class: "small" }, el("span", { class: "muted" }, s.source ?? ""), (s.tags ?? []).map((t) => [" ", el("span", { class: "badge" }, t)])))));
    if (!first) list.dataset.refreshed = String(Number(list.dataset.refreshed ?? 0) + 1);
    const pane = panel.querySelector("#skill-pane");
    const gone = pane.querySelector(".gone");
    if (pane.dataset.skill && !skills.some((s) => s.name === pane.dataset.skill)) {
      if (!gone) pane.prepend(el("p", { class: "gone notice" }, "The computer no longer offers this skill."));
    } else gone?.remove();
  } catch (e) {
    if (current()) ctx.fail(first ? panel : list, e);
  }
}

function fact(name, value) {
  return value == null || value === "" || (Array.isArray(value) && value.length === 0)
    ? null
    : [el("dt", null, name), el("dd", null, Array.isArray(value) ? value.join(", ") : value)];
}

function openSkill(panel, ctx, s) {
  const pane = panel.querySelector("#skill-pane");
  pane.dataset.skill = s.name;
  const file = el("input", { id: "skill-file", type: "text", value: "SKILL.md", spellcheck: "false", autocomplete: "off" });
  const view = el("div", { id: "skill-view" });
  const form = el("form", { class: "skill-form", method: "post", onsubmit: (ev) => {
    ev.preventDefault();
    readFile(ctx, s.name, file.value.trim() || "SKILL.md", view);
  } }, el("label", { for: "skill-file" }, "File in the skill"), file, el("button", { type: "submit", id: "skill-open" }, "Open"));
  const meta = s.skill_metadata && Object.keys(s.skill_metadata).length ? s.skill_metadata : null;
  const files = el("p", { id: "skill-files", class: "skill-files" });
  fill(pane,
    el("h3", null, s.name),
    s.description ? el("p", { class: "small" }, s.description) : null,
    el("dl", { class: "facts small" }, fact("source", s.source), fact("path", s.path ? el("code", null, s.path) : null),
      fact("uri", s.uri ? el("code", null, s.uri) : null), fact("version", s.version), fact("license", s.license),
      fact("compatibility", s.compatibility), fact("allowed tools", s.allowed_tools), fact("tags", s.tags)),
    meta ? el("details", null, el("summary", null, "metadata"), tree(meta)) : null,
    files, form, view);
  const open = (rel) => {
    file.value = rel;
    readFile(ctx, s.name, rel, view);
  };
  const mcp = /^mcp:(.+)$/.exec(s.source ?? "");
  if (mcp && s.uri) listResources(ctx, s.uri, mcp[1], files, open);
  readFile(ctx, s.name, "SKILL.md", view).then((body) => {
    if (!(mcp && s.uri) && typeof body === "string") showFiles(files, namedFiles(body), "named in SKILL.md", open);
  });
}

// showFiles lists a skill's files in box, each opened with open(rel).
function showFiles(box, rels, how, open) {
  fill(box, rels.length === 0 ? null : [el("span", { class: "small muted" }, `Files (${how}): `),
    rels.map((rel, i) => [i ? " · " : "", el("a", { href: "#", class: "skill-file", "data-rel-path": rel,
      onclick: (ev) => { ev.preventDefault(); open(rel); } }, rel)])]);
  box.dataset.how = how;
}

// namedFiles are the relative paths SKILL.md names: link targets and
// code spans that look like a file (a name with an extension, no scheme,
// not absolute, never "..").
export function namedFiles(md) {
  const found = new Set();
  const add = (p) => {
    p = p.trim().replace(/^\.\//, "");
    if (/^[\w.-]+(\/[\w.-]+)*\.[A-Za-z0-9]{1,8}$/.test(p) && !p.split("/").includes("..") && p !== "SKILL.md") found.add(p);
  };
  for (const m of md.matchAll(/\]\(([^)\s]+)\)/g)) if (!/^[a-z][a-z0-9+.-]*:/i.test(m[1]) && !m[1].startsWith("#")) add(m[1]);
  for (const m of md.matchAll(/`([^`\n]+)`/g)) add(m[1]);
  return [...found].sort();
}

// listResources lists the skill's files among its MCP server's resources
// (a few pages at most).
async function listResources(ctx, uri, bundle, box, open) {
  const prefix = `${uri.replace(/\/$/, "")}/`;
  const rels = [];
  let cursor;
  try {
    for (let page = 0; page < 10; page++) {
      const res = await ctx.client().call("GetResources", { ...ctx.addr, mcp_server: bundle, ...(cursor ? { cursor } : {}) });
      for (const r of res.resources ?? []) {
        if (typeof r.uri === "string" && r.uri.startsWith(prefix)) rels.push(decodeURIComponent(r.uri.slice(prefix.length)));
      }
      cursor = res.next_cursor;
      if (!cursor) break;
    }
    showFiles(box, rels.sort(), "its MCP server's resources", open);
  } catch (e) {
    ctx.fail(box, e);
  }
}

// Text blobs up to this size can be shown in the page as well.
const showLimit = 1 << 20;

// readFile shows one file of the skill; it returns its text when it came
// inline.
async function readFile(ctx, name, rel, view) {
  const current = latest(view);
  fill(view, el("p", { class: "muted" }, `Reading ${rel}…`));
  try {
    const res = await ctx.client().call("GetSkill", { ...ctx.addr, name, rel_path: rel });
    if (!current()) return;
    const path = res.rel_path || rel;
    const mime = res.mime_type ?? "";
    const size = Number(res.total_size ?? 0); // int64: a string in JSON
    const sha = res.sha256 ?? "";
    const fname = path.split("/").pop() || "file";
    const inline = typeof res.body === "string";
    const download = inline
      ? el("button", { type: "button", id: "skill-download", class: "blob-download",
        onclick: () => save(new Blob([res.body], { type: mime || "text/plain" }), fname) }, "Download")
      : downloadButton(ctx.client, ctx.addr, res.blob_handle, fname, { id: "skill-download" });
    const body = el("div", { class: "skill-body" });
    if (inline) fill(body, el("pre", { class: "text" }, res.body));
    else {
      fill(body, el("p", { class: "muted" }, `This file comes as a blob (${bytes(size)}), read with ReadBlob.`));
      if (/^text\/|json|xml|yaml/.test(mime) && size <= showLimit) {
        body.append(el("button", { type: "button", id: "skill-show", class: "secondary", onclick: async () => {
          fill(body, el("p", { class: "muted" }, "Reading…"));
          try {
            const got = await readBlob(ctx.client(), ctx.addr, res.blob_handle);
            fill(body, el("pre", { class: "text" }, await got.blob.text()));
          } catch (e) {
            ctx.fail(body, e);
          }
        } }, "Show it here"));
      }
    }
    fill(view,
      el("div", { class: "file-head small", "data-rel-path": path },
        el("code", null, path), ` · ${mime || "?"} · ${bytes(size)} · `,
        el("span", { title: `sha256 ${sha}` }, `sha256 ${sha.slice(0, 12)}…`), " · ", inline ? "inline" : "blob", " ", download),
      body);
    return inline ? res.body : undefined;
  } catch (e) {
    if (current()) ctx.fail(view, e);
  }
}
