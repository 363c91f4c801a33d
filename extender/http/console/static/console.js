// The console's shell: the address decides the view (deep links), views refresh by polling, and links
// move between views without reloading. Requests go only to this origin.
"use strict";
(function (GA) {
  const view = document.getElementById("view");
  const status = document.getElementById("status");
  const REFRESH_MS = 5000;
  let timer = null, generation = 0, lastManifest = "";

  async function api(path, options) {
    const opts = Object.assign({ headers: {} }, options || {});
    const token = sessionStorage.getItem("gpu-advisor-token");
    if (token) opts.headers.Authorization = "Bearer " + token;
    const reply = await fetch(path, opts);
    if (reply.status === 401 || reply.status === 403) document.getElementById("token-form").hidden = false;
    const body = await reply.json().catch(() => ({ detail: "unreadable reply (" + reply.status + ")" }));
    if (!reply.ok) throw new Error(body.detail || "HTTP " + reply.status);
    return body;
  }

  function show(node) {
    view.replaceChildren(node);
    status.textContent = "updated " + new Date().toLocaleTimeString();
  }
  const fail = (err) => { view.replaceChildren(GA.el("p", { class: "error", text: String(err.message || err) })); };

  function poll(draw) {
    const mine = ++generation;
    const tick = () => draw().then(() => { if (mine === generation) timer = setTimeout(tick, REFRESH_MS); }, fail);
    clearTimeout(timer);
    tick();
  }

  async function whatIf(text) {
    lastManifest = text;
    const yamlish = !text.trim().startsWith("{");
    try {
      const ans = await api("/v1/dry-run", { method: "POST", body: text, headers: { "Content-Type": yamlish ? "application/yaml" : "application/json" } });
      const top = ans.ranked.filter((r) => r.gpus && r.gpus.length).slice(0, 3);
      const nodes = await Promise.all(top.map((r) => api("/v1/console/nodes/" + encodeURIComponent(r.node))));
      const answer = GA.whatIfAnswer(ans, nodes.map((n, i) => [n, top[i].gpus]));
      show(GA.el("div", {}, GA.whatIfForm(whatIf, text), answer));
    } catch (err) {
      show(GA.el("div", {}, GA.whatIfForm(whatIf, text), GA.el("p", { class: "error", id: "answer", text: String(err.message) })));
    }
  }

  async function podPage(ns, name) {
    const pod = await api("/v1/console/pods/" + encodeURIComponent(ns) + "/" + encodeURIComponent(name));
    const node = await api("/v1/console/nodes/" + encodeURIComponent(pod.node));
    show(GA.podView(pod, node));
    const note = document.getElementById("rightsize");
    api("/v1/rightsize?namespace=" + encodeURIComponent(ns)).then(
      (report) => note && note.replaceChildren(GA.rightsizeNote(report, pod.pod)),
      (err) => note && note.replaceChildren(GA.el("p", { class: "muted", text: "Right-sizing: " + err.message })));
  }

  function route() {
    const parts = location.pathname.split("/").filter(Boolean).map(decodeURIComponent);
    clearTimeout(timer);
    generation++;
    if (parts[0] === "nodes" && parts.length === 2) {
      poll(() => api("/v1/console/nodes/" + encodeURIComponent(parts[1])).then((v) => show(GA.nodeView(v))));
    } else if (parts[0] === "pods" && parts.length === 3) {
      poll(() => podPage(parts[1], parts[2]));
    } else if (parts[0] === "pending") {
      poll(() => api("/v1/console/pending").then((d) => show(GA.pendingView(d))));
    } else if (parts[0] === "defrag") {  // asked once, not polled: a plan is a search, not a reading
      const mine = generation;
      const plan = () => {
        view.replaceChildren(GA.el("p", { class: "muted", text: "Planning…" }));
        api("/v1/defrag", { method: "POST", body: "{}", headers: { "Content-Type": "application/json" } })
          .then((p) => { if (mine === generation) show(GA.defragView(p, plan)); }, fail);
      };
      plan();
    } else if (parts[0] === "what-if") {
      show(GA.whatIfForm(whatIf, lastManifest));
    } else {
      const render = (d) => { const redraw = () => show(GA.clusterView(d, redraw)); redraw(); };
      poll(() => api("/v1/console/cluster").then(render));
    }
  }

  document.addEventListener("click", (e) => {
    const a = e.target.closest("a[data-nav]");
    if (!a || e.ctrlKey || e.metaKey || e.shiftKey) return;
    e.preventDefault();
    history.pushState(null, "", a.getAttribute("href"));
    route();
  });
  window.addEventListener("popstate", route);
  document.getElementById("token-form").addEventListener("submit", (e) => {
    e.preventDefault();
    sessionStorage.setItem("gpu-advisor-token", document.getElementById("token").value);
    route();
  });
  route();
})(window.GA);
