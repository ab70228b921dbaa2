// A tool's result, MCP's CallToolResult, as the console shows it.

import { el, tree } from "./dom.js";

// renderResult shows an MCP CallToolResult: text as text, images as images,
// structured content (and anything else) as a tree.
export function renderResult(r, onURI) {
  const content = (r.content ?? []).map((c) => {
    switch (c.type) {
      case "text":
        return el("pre", { class: "text" }, c.text ?? "");
      case "image":
        if (/^image\/[\w.+-]+$/.test(c.mimeType ?? "") && typeof c.data === "string") {
          return el("img", { class: "result-image", alt: "image result", src: `data:${c.mimeType};base64,${c.data}` });
        }
        return tree(c, { label: "image (unknown type)" });
      case "resource":
        return el("div", { class: "resource" }, el("code", null, c.resource?.uri ?? ""),
          c.resource?.text != null ? el("pre", { class: "text" }, c.resource.text) : tree(c.resource ?? {}));
      default:
        return tree(c, { label: c.type ?? "content" });
    }
  });
  return el("div", { class: `result${r.isError ? " is-error" : ""}` },
    r.isError ? el("p", { class: "error" }, "The tool reported an error.") : null,
    content,
    r.structuredContent !== undefined
      ? el("details", { class: "structured", open: true }, el("summary", null, "structured content"),
        tree(r.structuredContent, { open: 2, onURI }))
      : null,
    r.meta && Object.keys(r.meta).length ? el("details", null, el("summary", null, "meta"), tree(r.meta)) : null);
}
