// The gateway's own figures, from its Prometheus text at /metrics (no key
// needed there), as small inline-SVG charts: calls per second, mean latency,
// calls in flight, refusals per second.

import { el, fill, svg } from "./dom.js";

// parseProm parses the Prometheus text format into name -> [{labels, value}].
export function parseProm(text) {
  const out = new Map();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels = {};
    for (const l of (m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    const value = Number(m[3]);
    if (!out.has(m[1])) out.set(m[1], []);
    out.get(m[1]).push({ labels, value });
  }
  return out;
}

function sum(metrics, name) {
  return (metrics.get(name) ?? []).reduce((a, s) => a + s.value, 0);
}

const charts = [
  { id: "calls", title: "calls / s", fmt: (v) => v.toFixed(1) },
  { id: "latency", title: "mean latency, ms", fmt: (v) => v.toFixed(1) },
  { id: "inflight", title: "in flight (streams too)", fmt: (v) => v.toFixed(0) },
  { id: "refused", title: "refusals / s", fmt: (v) => v.toFixed(1) },
];

// Metrics polls /metrics and redraws the charts in root. The gateway serves
// /metrics on its public port to operator keys only: start is given the
// signed-in key's header.
export class Metrics {
  constructor(root, { interval = 2000, points = 60 } = {}) {
    this.root = root;
    this.interval = interval;
    this.points = points;
    this.series = Object.fromEntries(charts.map((c) => [c.id, []]));
    this.prev = null;
  }

  start(headers = {}) {
    this.headers = headers;
    this.stop();
    this.tick();
    this.timer = setInterval(() => this.tick(), this.interval);
  }

  stop() {
    clearInterval(this.timer);
  }

  async tick() {
    let text;
    try {
      const res = await fetch("/metrics", { cache: "no-store", credentials: "omit", headers: this.headers });
      if (res.status === 404) {
        fill(this.root, el("p", { class: "muted", id: "metrics-off" }, "This gateway does not serve /metrics (start it with --metrics)."));
        this.stop();
        return;
      }
      if (res.status === 401 || res.status === 403) {
        fill(this.root, el("p", { class: "muted", id: "metrics-off" }, "The gateway's figures are for operator keys (a key without roles, offices or name)."));
        this.stop();
        return;
      }
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      text = await res.text();
    } catch (e) {
      fill(this.root, el("p", { class: "error" }, `Metrics unavailable: ${e.message}`));
      return;
    }
    const m = parseProm(text);
    const now = performance.now() / 1000;
    const cur = {
      t: now,
      calls: sum(m, "smcp_calls_total"),
      latSum: sum(m, "smcp_call_duration_seconds_sum"),
      latCount: sum(m, "smcp_call_duration_seconds_count"),
      refused: sum(m, "smcp_refused_total"),
    };
    const inflight = sum(m, "smcp_calls_in_flight");
    if (this.prev) {
      const dt = Math.max(cur.t - this.prev.t, 1e-3);
      const dn = cur.latCount - this.prev.latCount;
      this.push("calls", Math.max(0, (cur.calls - this.prev.calls) / dt));
      this.push("latency", dn > 0 ? ((cur.latSum - this.prev.latSum) / dn) * 1000 : 0);
      this.push("refused", Math.max(0, (cur.refused - this.prev.refused) / dt));
    }
    this.push("inflight", inflight);
    this.prev = cur;
    this.draw({ calls: cur.calls, refused: cur.refused });
  }

  push(id, v) {
    const s = this.series[id];
    s.push(v);
    if (s.length > this.points) s.shift();
  }

  draw(totals) {
    const cards = charts.map((c) => {
      const s = this.series[c.id];
      const last = s.length ? c.fmt(s[s.length - 1]) : "…";
      const total = c.id === "calls" ? `${totals.calls} in all` : c.id === "refused" ? `${totals.refused} in all` : "";
      return el("div", { class: "metric", id: `metric-${c.id}`, "data-value": s.length ? s[s.length - 1] : "" },
        el("div", { class: "metric-head" }, el("span", null, c.title), el("strong", null, last)),
        spark(s, this.points),
        total ? el("div", { class: "muted small" }, total) : null);
    });
    fill(this.root, cards);
  }
}

// spark draws a series as a polyline scaled to its own maximum.
function spark(values, points) {
  const w = 160, h = 36;
  const max = Math.max(...values, 1e-9);
  const step = w / Math.max(points - 1, 1);
  const x0 = w - (values.length - 1) * step;
  const pts = values.map((v, i) => `${(x0 + i * step).toFixed(1)},${(h - 2 - (v / max) * (h - 4)).toFixed(1)}`).join(" ");
  return svg("svg", { viewBox: `0 0 ${w} ${h}`, width: w, height: h, class: "spark", role: "img", preserveAspectRatio: "none" },
    svg("line", { x1: 0, y1: h - 1, x2: w, y2: h - 1, class: "axis" }),
    values.length > 1 ? svg("polyline", { points: pts, class: "line" }) : null);
}
