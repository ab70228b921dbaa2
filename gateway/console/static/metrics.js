// The gateway's own figures, as small inline-SVG charts: calls per second,
// mean latency, calls in flight, refusals per second. They come from
// GetFigures (operator keys only), which sums every node's figures: behind
// a load balancer each poll may reach another node, and each answers for
// the whole cluster.

import { el, fill, svg } from "./dom.js";

// figuresOf reads a GetFigures answer: the sums the charts need, and how
// many nodes they are summed over.
export function figuresOf(res) {
  const f = res?.figures ?? {};
  const n = (k) => Number(f[k] ?? 0);
  return { calls: n("calls_total"), latSum: n("call_seconds_sum"), latCount: n("call_seconds_count"),
    refused: n("refused_total"), inflight: n("calls_in_flight"), nodes: Math.max((res?.nodes ?? []).length, 1) };
}

const charts = [
  { id: "calls", title: "calls / s", fmt: (v) => v.toFixed(1) },
  { id: "latency", title: "mean latency, ms", fmt: (v) => v.toFixed(1) },
  { id: "inflight", title: "in flight (streams too)", fmt: (v) => v.toFixed(0) },
  { id: "refused", title: "refusals / s", fmt: (v) => v.toFixed(1) },
];

// Metrics polls GetFigures and redraws the charts in root; start is given
// the signed-in client.
export class Metrics {
  constructor(root, { interval = 2000, points = 60 } = {}) {
    this.root = root;
    this.interval = interval;
    this.points = points;
    this.series = Object.fromEntries(charts.map((c) => [c.id, []]));
    this.prev = null;
  }

  start(client) {
    this.client = client;
    this.stop();
    this.tick();
    this.timer = setInterval(() => this.tick(), this.interval);
  }

  stop() {
    clearInterval(this.timer);
  }

  async tick() {
    let res;
    try {
      res = await this.client.call("GetFigures", {});
    } catch (e) {
      if (e.code === "failed_precondition" || e.code === "unimplemented") {
        fill(this.root, el("p", { class: "muted", id: "metrics-off" }, "This gateway keeps no figures (it runs with --metrics=false)."));
        this.stop();
        return;
      }
      if (e.code === "permission_denied") {
        fill(this.root, el("p", { class: "muted", id: "metrics-off" }, "The gateway's figures are for operator keys (a key without roles, offices or name)."));
        this.stop();
        return;
      }
      fill(this.root, el("p", { class: "error" }, `Figures unavailable: ${e.message}`));
      return;
    }
    const cur = { t: performance.now() / 1000, ...figuresOf(res) };
    if (this.prev) {
      const dt = Math.max(cur.t - this.prev.t, 1e-3);
      const dn = cur.latCount - this.prev.latCount;
      // A node that left takes its counts with it: never a negative rate.
      this.push("calls", Math.max(0, (cur.calls - this.prev.calls) / dt));
      this.push("latency", dn > 0 ? Math.max(0, ((cur.latSum - this.prev.latSum) / dn) * 1000) : 0);
      this.push("refused", Math.max(0, (cur.refused - this.prev.refused) / dt));
    }
    this.push("inflight", cur.inflight);
    this.prev = cur;
    this.draw(cur);
  }

  push(id, v) {
    const s = this.series[id];
    s.push(v);
    if (s.length > this.points) s.shift();
  }

  draw(totals) {
    const over = totals.nodes > 1 ? ` over ${totals.nodes} nodes` : "";
    const cards = charts.map((c) => {
      const s = this.series[c.id];
      const last = s.length ? c.fmt(s[s.length - 1]) : "…";
      const total = c.id === "calls" ? `${totals.calls} in all${over}` : c.id === "refused" ? `${totals.refused} in all${over}` : "";
      return el("div", { class: "metric", id: `metric-${c.id}`, "data-value": s.length ? s[s.length - 1] : "" },
        el("div", { class: "metric-head" }, el("span", null, c.title), el("strong", null, last)),
        spark(s, this.points),
        total ? el("div", { class: "muted small" }, total) : null);
    });
    fill(this.root, cards);
    this.root.dataset.nodes = String(totals.nodes);
    this.root.dataset.calls = String(totals.calls);
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
