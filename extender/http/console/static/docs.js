// A small offline reader of /openapi.json: every operation with its summary, parameters, request body
// and replies. Bundled with the server, so /docs works where no CDN can be reached.
"use strict";
(function (GA) {
  const { el, table } = GA;
  const root = document.getElementById("docs");

  function schemaText(content) {
    return Object.entries(content || {}).map(([type, media]) => type + ": " + JSON.stringify(media.schema || {}, null, 2)).join("\n\n");
  }

  function operation(path, method, op) {
    const params = (op.parameters || []).map((p) => [p.name, p.in, p.required ? "yes" : "no", (p.schema && p.schema.type) || "", p.description || ""]);
    const replies = Object.entries(op.responses || {}).map(([code, r]) => [code, r.description || ""]);
    const body = op.requestBody ? schemaText(op.requestBody.content) : "";
    return el("details", { class: "op", id: method + path },
      el("summary", {}, el("span", { class: "method m-" + method, text: method }), " ", el("span", { class: "path", text: path }), " ", el("span", { class: "muted", text: op.summary || "" })),
      el("div", { class: "body" },
        op.description ? el("p", { text: op.description }) : null,
        params.length ? table(["parameter", "in", "required", "type", "description"], params) : null,
        body ? [el("h3", { text: "Request body" }), el("pre", { text: body })] : null,
        el("h3", { text: "Replies" }), table(["status", "meaning"], replies)));
  }

  fetch("/openapi.json").then((r) => r.json()).then((doc) => {
    const byTag = {};
    for (const [path, ops] of Object.entries(doc.paths || {})) {
      for (const [method, op] of Object.entries(ops)) {
        const tag = (op.tags && op.tags[0]) || "other";
        (byTag[tag] = byTag[tag] || []).push(operation(path, method, op));
      }
    }
    root.replaceChildren(el("h1", { text: doc.info.title + " " + doc.info.version }),
      el("p", { class: "muted", text: doc.info.summary || "" }),
      ...Object.entries(byTag).flatMap(([tag, ops]) => [el("h2", { text: tag }), ...ops]));
  }, (err) => root.replaceChildren(el("p", { class: "error", text: "cannot read /openapi.json: " + err })));
})(window.GA);
