// The six views. Each takes the JSON its /v1/console route (or /v1/dry-run) answers and returns DOM.
"use strict";
window.GA = window.GA || {};
(function (GA) {
  const { el, link, table, fmt } = GA;
  const filters = { product: "", namespace: "" };

  function totals(t) {
    const box = (label, n, alarm) => el("div", { class: "total" + (alarm ? " alarm" : "") }, el("b", { text: n }), label);
    return el("div", { class: "totals", id: "totals" },
      box("GPUs", t.gpus), box("allocated", t.allocated), box("allocated and used (SM ≥ 10 %)", t.used),
      box("allocated but idle", t.allocated_idle, t.allocated_idle > 0), box("free", t.free),
      box("free but memory held", t.memory_held, t.memory_held > 0), box("unhealthy", t.unhealthy, t.unhealthy > 0));
  }

  function select(name, options, redraw) {
    const s = el("select", { name: name, id: "filter-" + name, on: { change: (e) => { filters[name] = e.target.value; redraw(); } } },
      el("option", { value: "", text: "all" }), options.map((o) => el("option", { value: o, text: o })));
    s.value = filters[name];
    return el("label", {}, name + " ", s);
  }

  // Bound pods holding more than the node has: pods scheduled without the advisor (or its sharing scheduler).
  const overcommitted = (n) => n.overcommitted && n.overcommitted.length
    ? el("p", { class: "error overcommitted", text: "Over-committed: " + n.overcommitted.join("; ") }) : null;

  function nodeCard(n) {
    const mig = n.mig.map((m) => m.profile + " " + m.free + "/" + m.total + " free").join(", ");
    return el("section", { class: "card node", "data-node": n.name },
      el("h3", {}, link(GA.nodeHref(n.name), n.name)),
      el("div", { class: "muted", text: (n.product || "unknown product") + " · " + n.sharing + " · " + n.gpus_free + "/" + n.gpus_allocatable + " free · " + GA.age(n.telemetry_age_s) }),
      overcommitted(n),
      n.gpus.length ? el("div", { class: "tiles" }, n.gpus.map(GA.tile)) : el("p", { class: "muted", text: mig ? "MIG slices: " + mig : "no per-GPU topology" }),
      el("ul", { class: "pods" }, n.pods.map((p) => el("li", {}, link(GA.podHref(p.key), p.key), " — " + p.request))));
  }

  GA.clusterView = (doc, redraw) => {
    const shown = doc.nodes.filter((n) => (!filters.product || n.product === filters.product) &&
      (!filters.namespace || n.namespaces.includes(filters.namespace)));
    return el("div", {},
      el("h1", { text: "Cluster · " + doc.source }),
      totals(doc.totals), GA.legend(),
      el("div", { class: "filters" }, select("product", doc.products, redraw), select("namespace", doc.namespaces, redraw)),
      racked(doc.racks || [], shown));
  };

  // Nodes that share an NVLink clique sit in one rack box (its trays, GPUs and pod groups); the rest
  // stay a plain grid of cards.
  function racked(racks, shown) {
    const inRack = new Set(racks.flatMap((r) => r.trays));
    const loose = shown.filter((n) => !inRack.has(n.name));
    return el("div", {},
      racks.map((r) => rackBox(r, shown.filter((n) => r.trays.includes(n.name)))).filter((box) => box),
      loose.length ? el("div", { class: "nodes" }, loose.map(nodeCard)) : null);
  }

  function rackBox(r, trays) {
    if (!trays.length) return null;  // every tray filtered out: no empty box
    return el("section", { class: "rack", "data-clique": r.clique },
      el("h2", { class: "rack-title", title: r.clique, text: "NVLink clique " + r.short }),
      el("div", { class: "muted rack-counts", text: r.trays.length + " trays · " + r.gpus + " GPUs · " + r.free + " free · " + r.allocated + " allocated" }),
      r.groups.length ? el("ul", { class: "rack-groups" }, r.groups.map((g) => el("li", { text: g.kind + " " + g.key + ": " + g.text }))) : null,
      el("div", { class: "nodes" }, trays.map(nodeCard)));
  }

  function bestSets(view, lightUp) {
    return table(["k", "GPUs", "score", "NVLink pairs", "why none"],
      view.best_sets.map((b) => [String(b.k), b.gpus ? b.gpus.join(", ") : "–", fmt(b.score), b.nvlink_share === null ? "–" : Math.round(b.nvlink_share * 100) + " %", b.problem || ""]),
      (i) => ({ class: "pick", "data-k": view.best_sets[i].k, on: { click: () => lightUp(view.best_sets[i].gpus || []) } }));
  }

  const lit = {};  // node → the best set last clicked: a refresh redraws the node with it still lit

  GA.nodeView = (view) => {
    const holder = el("div", { id: "drawing" }, GA.wiring(view, lit[view.name] || []));
    const lightUp = (gpus) => { lit[view.name] = gpus; holder.replaceChildren(GA.wiring(view, gpus)); };
    return el("div", {},
      el("h1", { text: "Node " + view.name }),
      el("p", { class: "muted", text: (view.product || "unknown product") + " · " + view.sharing + " · " + view.gpus_free + "/" + view.gpus_allocatable + " free · " + GA.age(view.telemetry_age_s) }),
      overcommitted(view),
      view.clique ? el("p", { class: "clique", id: "clique" }, "NVLink clique ", el("b", { title: view.clique.clique, text: view.clique.short }),
        " · rack-mates: ", view.clique.rack_mates.flatMap((m, i) => [i ? ", " : "", link(GA.nodeHref(m), m)])) : null,
      GA.legend(),
      el("div", { class: "split" },
        el("div", {}, holder, el("h2", { text: "Links (NVLink count, else PCIe level)" }), GA.pcieTable(view)),
        el("div", {},
          el("h2", { text: "Best sets it could give now (click to light)" }), bestSets(view, lightUp),
          el("h2", { text: "Pods" }), el("ul", {}, view.pods.map((p) => el("li", {}, link(GA.podHref(p.key), p.key), " — " + p.request))),
          view.mig.length ? el("p", { text: "MIG: " + view.mig.map((m) => m.profile + " " + m.free + "/" + m.total + " free").join(", ") }) : null)));
  };

  const breakdown = (b) => Object.entries(b || {}).map(([k, v]) => k + " " + Math.round(v * 100) / 100).join(", ");

  GA.verdictRows = (rows) => rows.map((v) => [link(GA.nodeHref(v.node), v.node), String(v.score), v.gpus ? v.gpus.join(", ") : "–", v.reason, breakdown(v.breakdown)]);

  GA.podView = (pod, node) => {
    const here = pod.here;
    return el("div", {},
      el("h1", {}, "Pod ", el("span", { id: "pod-name", text: pod.pod })),
      el("p", {}, pod.request + " on ", link(GA.nodeHref(pod.node), pod.node), " · GPUs " + (pod.gpus.length ? pod.gpus.join(", ") : "–") + " (" + pod.gpus_known_by + ")"),
      el("div", { class: "split" },
        el("div", {}, GA.wiring(node, pod.gpus)),
        el("div", {},
          el("h2", { text: "Its node, judged now for a pod of this shape" }),
          here ? el("p", { class: "verdict", text: (here.fits ? "score " + here.score + ": " : "would not fit now: ") + here.reason }) : null,
          here ? el("p", { class: "muted", text: breakdown(here.breakdown) }) : null,
          el("div", { id: "rightsize" }))),
      el("h2", { text: "Admission findings" }),
      pod.findings === null ? el("p", { class: "muted", text: "This server's source lists no Pod objects to review." })
        : pod.findings.length ? GA.findings(pod.findings) : el("p", { text: "None: the admission advisor has nothing to say." }),
      el("h2", { text: "Where this shape would go now (the alternatives)" }),
      table(["node", "score", "GPUs", "reason", "breakdown"], GA.verdictRows(pod.ranked)),
      el("h2", { text: "Nodes that would refuse it" }),
      table(["node", "reason"], pod.filtered.map((v) => [link(GA.nodeHref(v.node), v.node), v.reason])));
  };

  GA.findings = (list) => el("ul", { class: "findings" }, list.map((f) => el("li", { text: f.severity + " " + f.code + ": " + f.message + " " + f.advice })));

  GA.rightsizeNote = (report, pod) => {
    const w = (report.workloads || []).find((x) => (x.pods || []).includes(pod));
    if (!w) return el("p", { class: "muted", text: "Right-sizing: no history for this pod's workload." });
    const r = w.recommendation;
    return el("div", {}, el("p", {}, el("b", { text: "Right-sizing: " }), r.summary + " (" + r.confidence + " confidence)"),
      el("ul", {}, r.evidence.map((e) => el("li", { text: e }))));
  };

  function steps(d) {
    return el("ol", { class: "steps" }, d.steps.map((s) =>
      el("li", { class: s.explains ? "explains" : "ruled-out" }, s.step + ": " + s.finding,
        s.evidence.length ? el("ul", {}, s.evidence.map((e) => el("li", { text: e }))) : null)));
  }

  GA.pendingView = (doc) => el("div", {},
    el("h1", { text: "Pending GPU pods" }),
    doc.listed ? null : el("p", { class: "muted", text: doc.note }),
    doc.listed && !doc.pods.length ? el("p", { text: "No pending GPU pods." }) : null,
    doc.pods.map((d) => el("section", { class: "pending", "data-pod": d.pod },
      el("h2", { text: d.pod + (d.request ? " — " + d.request : "") }),
      d.problem ? el("p", { class: "error", text: d.problem }) : [
        el("p", { class: "verdict", text: "Explained by " + (d.explained_by || "nothing") }), steps(d),
        el("h2", { text: "What the extender tells kube-scheduler, per node" }),
        table(["node", "fits", "score", "reason"], d.node_reasons.map((v) => [link(GA.nodeHref(v.node), v.node),
          v.fits ? "yes" : (v.held_until ? "held" : "no"), String(v.score),
          v.held_until ? v.reason + " (until " + v.held_until + " at the latest: the hold limit)" : v.reason]))])));

  GA.whatIfForm = (onSubmit, last) => {
    const area = el("textarea", { id: "manifest", name: "manifest", spellcheck: "false", placeholder: "Paste a Pod or Deployment manifest (YAML or JSON)" });
    area.value = last || "";
    return el("form", { id: "what-if", on: { submit: (e) => { e.preventDefault(); onSubmit(area.value); } } },
      el("h1", { text: "What-if: where would this go?" }), area, el("p", {}, el("button", { type: "submit", text: "Rank the nodes" })));
  };

  GA.whatIfAnswer = (ans, drawings) => el("div", { id: "answer" },
    el("p", { class: "verdict", text: ans.pod + " (" + ans.request + "): " + ans.verdict }),
    ans.findings.length ? GA.findings(ans.findings) : null,
    el("h2", { text: "Ranked nodes" }),
    table(["node", "score", "GPUs", "reason", "breakdown"], GA.verdictRows(ans.ranked)),
    el("div", { class: "drawings" }, drawings.map(([node, gpus]) => el("div", { class: "drawing", "data-node": node.name },
      el("h2", { text: node.name + ": GPUs " + gpus.join(", ") }), GA.wiring(node, gpus)))),
    ans.filtered.length ? el("h2", { text: "Filtered out" }) : null,
    ans.filtered.length ? table(["node", "stage", "reason"], ans.filtered.map((f) => [f.node, f.stage, f.reason])) : null);

  // The fleet plan (POST /v1/defrag, a dry run): each move, what it gives back, what stays and why.
  const milli = (v) => (v === null || v === undefined ? "–" : String(Math.round(v)));
  GA.defragView = (plan, again) => el("div", { id: "defrag" },
    el("h1", { text: "Defragmentation: the fleet plan (dry run)" }),
    el("p", { class: "verdict", text: plan.verdict }),
    el("p", { class: "muted", text: "Stranded now: " + milli(plan.stranded_before) + " milli-GPU · after the plan: " +
      milli(plan.stranded_after) + " · " + plan.movable + " pod(s) may move · " + plan.searched + " arrangements judged" }),
    plan.moves.length ? table(["#", "evict", "from", "its replacement goes to", "GPUs there", "gives back (milli-GPU)"],
      plan.moves.map((m, i) => [String(i + 1), m.pod, link(GA.nodeHref(m.source), m.source), link(GA.nodeHref(m.target), m.target),
        m.gpus ? m.gpus.join(", ") : "–", milli((i ? plan.moves[i - 1].stranded_after : plan.stranded_before) - m.stranded_after)]),
      (i) => ({ class: "move", "data-pod": plan.moves[i].pod })) : null,
    el("p", { class: "muted", text: "Nothing was evicted. To make this plan: gpu-advisor defrag --cluster kube --budget " +
      plan.budget + " --apply (with your own credentials)." }),
    el("p", {}, el("button", { type: "button", id: "plan-again", text: "Plan again", on: { click: again } })),
    el("h2", { text: "Left alone (" + plan.left_alone.length + ")" }),
    plan.left_alone.length ? table(["pod", "why it stays"], plan.left_alone.map((x) => [x.pod, x.why]),
      (i) => ({ class: "left-alone", "data-pod": plan.left_alone[i].pod })) : el("p", { class: "muted", text: "Every GPU pod may move." }));
})(window.GA);
