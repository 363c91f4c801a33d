// DOM and SVG helpers, and the GPU wiring drawing. Every piece of data goes in as text (textContent or
// an attribute), never as markup: a pod named "<img src=x onerror=alert(1)>" shows as those characters.
"use strict";
window.GA = window.GA || {};
(function (GA) {
  const SVG = "http://www.w3.org/2000/svg";

  function fill(node, attrs, children) {
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "text") node.textContent = String(v);
      else if (k === "on") for (const [ev, fn] of Object.entries(v)) node.addEventListener(ev, fn);
      else node.setAttribute(k, String(v));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
    }
    return node;
  }
  GA.el = (tag, attrs, ...children) => fill(document.createElement(tag), attrs, children);
  GA.svg = (tag, attrs, ...children) => fill(document.createElementNS(SVG, tag), attrs, children);

  GA.link = (href, text) => GA.el("a", { href: href, "data-nav": "" }, text);
  GA.podHref = (key) => {
    const [ns, ...rest] = key.split("/");
    return "/pods/" + encodeURIComponent(ns) + "/" + encodeURIComponent(rest.join("/"));
  };
  GA.nodeHref = (name) => "/nodes/" + encodeURIComponent(name);
  GA.fmt = (v, unit) => (v === null || v === undefined ? "–" : String(v) + (unit || ""));
  GA.age = (s) => (s === null || s === undefined ? "telemetry without sample time" : "telemetry " + s + " s old");
  GA.gib = (mib) => (mib === null || mib === undefined ? "–" : (mib / 1024).toFixed(1));

  GA.table = (head, rows, rowAttrs) =>
    GA.el("table", {},
      GA.el("thead", {}, GA.el("tr", {}, head.map((h) => GA.el("th", { text: h })))),
      GA.el("tbody", {}, rows.map((cells, i) =>
        GA.el("tr", rowAttrs ? rowAttrs(i) : {}, cells.map((c) => GA.el("td", {}, c))))));

  GA.tile = (t) => GA.el("div", { class: "tile s-" + t.state, title: t.state + (t.pod ? " · " + t.pod : "") },
    GA.el("b", { text: "GPU " + t.index }),
    GA.el("span", { text: "SM " + GA.fmt(t.sm_pct, " %") }), GA.el("br"),
    GA.el("span", { text: GA.gib(t.vram_used_mib) + "/" + GA.gib(t.vram_total_mib) + " GiB" }));

  GA.legend = () => GA.el("div", { class: "legend" },
    ["free", "allocated", "busy", "memory-held", "unhealthy"].map((s) =>
      GA.el("span", { class: "s-" + s, text: s === "allocated" ? "allocated, SM idle" : s })));

  // Layout: one row per NUMA group, GPUs left to right; NVLink pairs as curves whose width grows with
  // the link count; an NVSwitch board as one hub every GPU joins. PCIe levels are in the table below.
  const W = 118, H = 74, GAP = 34, PAD = 30;

  function positions(view) {
    const rows = view.wiring.numa.map((g) => g.gpus);
    const at = {};
    rows.forEach((gpus, r) => gpus.forEach((g, c) => {
      at[g] = { x: PAD + c * (W + GAP), y: PAD + r * (H + 2 * GAP) + 16 };
    }));
    const cols = Math.max(...rows.map((r) => r.length));
    const last = PAD + (rows.length - 1) * (H + 2 * GAP) + 16;
    return { at, rows, last, width: 2 * PAD + cols * (W + GAP) - GAP, height: 2 * PAD + rows.length * (H + 2 * GAP) + 40 };
  }

  // Pairs in one row arc above it (the last row: below), so no curve crosses a GPU; pairs across rows
  // run from the upper GPU's bottom edge to the lower one's top edge.
  function nvlinkPath(a, b, last) {
    const ax = a.x + W / 2, bx = b.x + W / 2;
    if (a.y === b.y) {
      const span = Math.abs(bx - ax) / (W + GAP);
      const below = a.y === last;
      const edge = below ? a.y + H : a.y;
      const cy = below ? edge + 16 + 14 * span : edge - 16 - 14 * span;
      return "M" + ax + " " + edge + " Q" + (ax + bx) / 2 + " " + cy + " " + bx + " " + edge;
    }
    const [up, down] = a.y < b.y ? [a, b] : [b, a];
    const ux = up.x + W / 2, dx = down.x + W / 2;
    return "M" + ux + " " + (up.y + H) + " C" + ux + " " + (up.y + H + GAP) + " " + dx + " " + (down.y - GAP) + " " + dx + " " + down.y;
  }

  function gpuBox(t, p, lit) {
    const migs = t.mig.map((m, i) => GA.svg("rect", { class: "mig", x: p.x + 4 + i * 14, y: p.y + H - 14, width: 12, height: 10 },
      GA.svg("title", { text: "MIG " + m })));
    return GA.svg("g", { class: "gpu" + (lit ? " lit" : ""), "data-gpu": t.index },
      GA.svg("rect", { class: "box s-" + t.state, x: p.x, y: p.y, width: W, height: H, rx: 6 }),
      GA.svg("text", { x: p.x + 6, y: p.y + 15, text: "GPU " + t.index + " · " + t.state }),
      GA.svg("text", { x: p.x + 6, y: p.y + 30, text: "SM " + GA.fmt(t.sm_pct, " %") }),
      GA.svg("text", { x: p.x + 6, y: p.y + 45, text: GA.gib(t.vram_used_mib) + "/" + GA.gib(t.vram_total_mib) + " GiB" }),
      GA.svg("text", { x: p.x + 6, y: p.y + 59, text: t.pod ? t.pod : "" }),
      migs,
      GA.svg("title", { text: "GPU " + t.index + ": " + t.state + (t.pod ? ", " + t.pod : "") }));
  }

  GA.wiring = (view, lit) => {
    if (!view.wiring) return GA.el("p", { class: "muted", text: "No GPU topology known for this node" + (view.topology_problem ? ": " + view.topology_problem : ".") });
    const litSet = new Set(lit || []);
    const { at, rows, last, width, height } = positions(view);
    const s = GA.svg("svg", { class: "wiring", viewBox: "0 0 " + width + " " + (height + (view.wiring.nvswitch ? 40 : 0)), width: width, role: "img", "aria-label": "GPU wiring of " + view.name });
    rows.forEach((gpus, r) => {
      const first = at[gpus[0]];
      const g = view.wiring.numa[r];
      s.appendChild(GA.svg("rect", { class: "numa", x: first.x - 10, y: first.y - 22, width: gpus.length * (W + GAP) - GAP + 20, height: H + 30, rx: 8 }));
      s.appendChild(GA.svg("text", { class: "numa-label", x: first.x - 6, y: first.y - 8, text: "NUMA " + (g.numa === null ? "?" : g.numa) }));
    });
    if (view.wiring.nvswitch) {
      const hx = width / 2 - 60, hy = height - 10;
      s.appendChild(GA.svg("rect", { class: "hub", x: hx, y: hy, width: 120, height: 26, rx: 5 }));
      s.appendChild(GA.svg("text", { class: "hub-label", x: hx + 8, y: hy + 17, text: "NVSwitch · NV" + view.wiring.nvswitch_links + " each" }));
      for (const p of Object.values(at)) s.appendChild(GA.svg("line", { class: "nvlink", x1: p.x + W / 2, y1: p.y + H, x2: width / 2, y2: hy, "stroke-width": 2 }));
    } else {
      view.wiring.links.filter((l) => l.nvlinks > 0).forEach((l) =>
        s.appendChild(GA.svg("path", { class: "nvlink", d: nvlinkPath(at[l.a], at[l.b], last), "stroke-width": 1 + l.nvlinks },
          GA.svg("title", { text: "GPU " + l.a + " ↔ GPU " + l.b + ": NV" + l.nvlinks }))));
    }
    for (const t of view.gpus) if (at[t.index]) s.appendChild(gpuBox(t, at[t.index], litSet.has(t.index)));
    return s;
  };

  GA.pcieTable = (view) => {
    if (!view.wiring) return null;
    const idx = view.gpus.map((t) => t.index);
    const label = {};
    for (const l of view.wiring.links) label[l.a + "-" + l.b] = label[l.b + "-" + l.a] = l.nvlinks ? "NV" + l.nvlinks : (l.pcie || "?");
    return GA.table([""].concat(idx.map((i) => "GPU" + i)), idx.map((a) => ["GPU" + a].concat(idx.map((b) => (a === b ? "X" : label[a + "-" + b] || "?")))));
  };
})(window.GA);
