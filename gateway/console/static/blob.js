// Blobs of a computer (SMCP 0.3+): a skill file or a tool result's binary
// content comes as a handle, read with the ReadBlob server stream and handed
// to the browser as a download.

import { APIError, describe } from "./api.js";
import { bytes, el, fill } from "./dom.js";

// readBlob streams a blob through the gateway's ReadBlob and returns it as a
// Blob. The gateway checks each chunk's offset, the total size and the
// SHA-256 before it sends the last message (eof); a stream that ends
// without eof carried a failed read and is an error here too, as is a byte
// count that is not the declared size. onProgress(received, total) follows
// the chunks. The page holds the chunks until the end (a Blob, which the
// browser may keep on disk): a download cannot be streamed to a file
// without a service worker, which this dependency-free page does without.
export async function readBlob(client, addr, handle, { onProgress, signal } = {}) {
  const parts = [];
  let received = 0;
  let total = 0;
  let mime = "";
  let sha256 = "";
  let eof = false;
  for await (const msg of client.stream("ReadBlob", { ...addr, blob_handle: handle }, signal)) {
    const chunk = fromBase64(msg.data ?? "");
    // int64 fields come as JSON strings in Connect's JSON.
    if (Number(msg.chunk_offset ?? 0) !== received) {
      throw new APIError("data_loss", `chunk at offset ${msg.chunk_offset}, expected ${received}`);
    }
    parts.push(chunk);
    received += chunk.length;
    total = Number(msg.total_size ?? 0);
    mime = msg.mime_type ?? mime;
    sha256 = msg.sha256 ?? sha256;
    eof = msg.eof === true;
    onProgress?.(received, total);
  }
  if (!eof) throw new APIError("data_loss", "the blob's stream ended before its last chunk");
  if (received !== total) throw new APIError("data_loss", `${received} bytes received, total_size ${total}`);
  return { blob: new Blob(parts, { type: mime || "application/octet-stream" }), mime, sha256, size: total };
}

function fromBase64(s) {
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

// save hands a Blob to the browser as a download named name.
export function save(blob, name) {
  const url = URL.createObjectURL(blob);
  const a = el("a", { href: url, download: name, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  // The download has taken its copy once click returns in every browser
  // we know, but revoking at once is refused by some: give it a minute.
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

// fileName makes a download name for a blob: the last segment of uri when
// there is one, else kind, the first hex of its SHA-256 and an extension
// from its MIME type.
export function fileName({ uri, kind = "blob", sha256 = "", mime = "" }) {
  const last = (uri ?? "").replace(/[?#].*$/, "").split("/").filter(Boolean).pop();
  if (last && /^[\w.+-]+$/.test(last)) return last;
  return `${kind}${sha256 ? `-${sha256.slice(0, 8)}` : ""}${extensions[mime.toLowerCase()] ?? ".bin"}`;
}

const extensions = {
  "image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif", "image/webp": ".webp", "image/svg+xml": ".svg",
  "audio/wav": ".wav", "audio/mpeg": ".mp3", "audio/ogg": ".ogg", "application/pdf": ".pdf",
  "application/json": ".json", "text/plain": ".txt", "text/markdown": ".md", "text/csv": ".csv",
  "application/zip": ".zip",
};

// downloadButton is a button that reads the blob handle of computer addr
// when clicked and saves it as name, its progress and errors shown beside
// it. client() gives the signed-in client at click time.
export function downloadButton(client, addr, handle, name, { label = "Download", id, cls = "blob-download" } = {}) {
  const status = el("span", { class: "blob-status small muted", role: "status" });
  let busy = null;
  const button = el("button", { type: "button", class: cls, id, "data-handle": handle, title: `ReadBlob ${handle}` }, label);
  button.addEventListener("click", async () => {
    if (busy) {
      busy.abort(); // a second click cancels
      return;
    }
    busy = new AbortController();
    button.textContent = "Cancel";
    status.className = "blob-status small muted";
    delete status.dataset.done;
    fill(status, "starting…");
    try {
      const got = await readBlob(client(), addr, handle, {
        signal: busy.signal,
        onProgress: (n, total) => fill(status, `${bytes(n)} of ${bytes(total)}`),
      });
      save(got.blob, name);
      fill(status, `saved ${name} (${bytes(got.size)}, sha256 ${got.sha256.slice(0, 12)}…)`);
      status.dataset.done = "true";
    } catch (e) {
      status.className = "blob-status small error";
      fill(status, e?.name === "AbortError" ? "cancelled" : describe(e));
    } finally {
      busy = null;
      button.textContent = label;
    }
  });
  return el("span", { class: "blob-action" }, button, " ", status);
}
