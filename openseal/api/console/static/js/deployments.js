// Deployments: which version each name runs, its history, and a rollback filed as a change
// proposal (reviewed and activated like any change).
import * as api from "./api.js";
import { h, replace, badge, time, short, fields } from "./dom.js";
import { command } from "./commands.js";

export async function list(main) {
  const found = (await api.get("/deployments")).deployments;
  replace(main, h("h1", {}, "Deployments"),
    found.length ? h("div", { class: "scroll" }, h("table", { id: "deployments" },
      h("caption", { class: "sr-only" }, "Deployments"),
      h("thead", {}, h("tr", {}, ["Name", "Kind", "Active version", "Activated"].map((l) => h("th", { scope: "col" }, l)))),
      h("tbody", {}, found.map((d) => h("tr", { dataset: { deployment: d.name } },
        h("td", {}, h("a", { href: `#/deployments/${encodeURIComponent(d.name)}` }, d.name)),
        h("td", {}, d.kind),
        h("td", {}, short(d.active_digest)),
        h("td", {}, time(d.activated_at), d.activated_by ? ` by ${d.activated_by}` : ""))))))
      : h("p", { class: "muted" }, "Nothing is deployed."));
}

export async function page(main, me, name) {
  const history = (await api.get(`/deployments/${encodeURIComponent(name)}/history`)).activations;
  const message = h("div", { id: "deployment-message" });
  const newest = history[history.length - 1];
  const rollback = (to) => command({ label: "Propose rollback", op: "rollback", message,
    path: `/deployments/${encodeURIComponent(name)}/rollback`, body: { to },
    then: () => page(main, me, name).then(() => document.getElementById("deployment-message")
      .append(h("p", { role: "status" }, "Filed as a change proposal: ", h("a", { href: "#/proposals" }, "review it")))) });
  replace(main, h("h1", {}, "Deployment ", name),
    fields([["Active version", newest ? short(newest.digest) : "—"], ["Activations", String(history.length)]]),
    h("div", { class: "scroll" }, h("table", { id: "activations" },
      h("caption", {}, "Versions, oldest first"),
      h("thead", {}, h("tr", {}, ["Version", "Activated", "By", "Proposal", ""].map((l) => h("th", { scope: "col" }, l)))),
      h("tbody", {}, history.map((a) => h("tr", { dataset: { digest: a.digest } },
        h("td", {}, short(a.digest), a === newest ? [" ", badge("active")] : ""),
        h("td", {}, time(a.at)),
        h("td", {}, a.actor),
        h("td", {}, a.change_proposal_id ? h("a", { href: `#/proposals/${encodeURIComponent(a.change_proposal_id)}` }, h("code", { class: "id" }, a.change_proposal_id)) : "—"),
        h("td", {}, a.digest !== newest.digest && me.may("deployments.rollback") ? rollback(a.digest) : "")))))),
    message);
}
