// A tool's result, MCP's CallToolResult, as the console shows it.

import { bytes, el, tree } from "./dom.js";

// blobOf returns the blob a content item was replaced by (SMCP 0.3+: binary
// content over the computer's inline budget comes with its data empty and,
// in the item's own _meta, a handle to read it with), or null.
export function blobOf(c) {
  const meta = c?._meta?.a2c_blob_handle ? c._meta : c?.resource?._meta?.a2c_blob_handle ? c.resource._meta : null;
  if (!meta || typeof meta.a2c_blob_handle !== "string") return null;
  return {
    handle: meta.a2c_blob_handle,
    size: meta.a2c_total_size,
    sha256: typeof meta.a2c_sha256 === "string" ? meta.a2c_sha256 : "",
    mime: c.mimeType ?? c.resource?.mimeType ?? "",
    uri: c.resource?.uri,
    kind: c.type ?? "blob",
  };
}

// renderResult shows an MCP CallToolResult: text as text, images as images,
// structured content (and anything else) as a tree. onURI opens dpe:// links;
// onBlob(blob) makes the download control of a content item that comes as a
// blob handle (without it the handle is only shown).
export function renderResult(r, onURI, onBlob) {
  const content = (r.content ?? []).map((c) => {
    const blob = blobOf(c);
    if (blob) {
      return el("div", { class: "blob", "data-handle": blob.handle },
        el("span", { class: "badge" }, blob.kind), " ",
        el("span", { class: "small" }, [blob.mime, blob.size != null ? bytes(blob.size) : null].filter(Boolean).join(" · ")),
        blob.uri ? [" ", el("code", null, blob.uri)] : null, " ",
        onBlob ? onBlob(blob) : el("code", { class: "small" }, blob.handle));
    }
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
