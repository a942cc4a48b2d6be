// Change proposals: the semantic diff with risk-widening lines marked, the policy, reviews,
// and the review / decide / activate buttons the caller may use.
import * as api from "./api.js";
import { h, replace, badge, time, fields, jsonView, notice, age } from "./dom.js";

export async function list(main) {
  const found = (await api.get("/proposals")).proposals;
  replace(main, h("h1", {}, "Change proposals"),
    found.length ? h("div", { class: "scroll" }, h("table", { id: "proposals" },
      h("thead", {}, h("tr", {}, ["Proposal", "Deployments", "Status", "Risk", "Author", "Age"].map((l) => h("th", { scope: "col" }, l)))),
      h("tbody", {}, found.map((p) => h("tr", {},
        h("td", {}, h("a", { href: `#/proposals/${encodeURIComponent(p.id)}` }, h("code", {}, p.id)), p.message ? ` ${p.message}` : ""),
        h("td", {}, p.targets.map((t) => `${t.kind}.${t.name}`).join(", ")),
        h("td", {}, badge(p.status)),
        h("td", {}, p.risk_widening ? h("span", { class: "widening" }, "widens risk") : "—"),
        h("td", {}, p.author),
        h("td", {}, age(p.created_at)))))))
      : h("p", { class: "muted" }, "No change proposals."));
}

function diffView(diff) {
  const changes = diff.changes || [];
  if (!changes.length) return h("p", { class: "muted" }, "No semantic changes.");
  return h("ul", { id: "diff", class: "diff" }, changes.map((change) => h("li",
    { class: change.widening ? "widening" : null, dataset: { widening: String(Boolean(change.widening)) } },
    change.widening ? h("strong", {}, "⚠ widens risk: ") : null,
    h("code", {}, change.definition), " ", h("code", {}, change.path), " — ", change.message)));
}

export async function page(main, me, id) {
  const view = await api.get(`/proposals/${encodeURIComponent(id)}`);
  const p = view.proposal;
  const message = h("div", { id: "proposal-message" });
  const comment = h("textarea", { id: "proposal-comment", rows: 2, maxlength: 4000 });
  const actions = [];
  const open = ["proposed", "in_review"].includes(p.status);
  const act = (op, body, label) => h("button", { type: "button", dataset: { op }, onclick: async () => {
    try {
      await api.post(`/proposals/${encodeURIComponent(p.id)}/${op}`, { ...body, comment: comment.value || null, expectedRevision: p.revision });
      await page(main, me, id);
      document.getElementById("proposal-message").append(notice("ok", `${label}: done.`));
    } catch (error) {
      replace(message, notice("error", error.code === "stale_revision"
        ? `Refused: the proposal changed since this page showed revision ${p.revision}. Reload.`
        : `Refused (${error.code}): ${error.message}`));
    }
  } }, label);
  // the buttons offered are the ones the API would accept from this viewer; the rest are
  // explained, not shown (the author neither reviews nor approves a change that widens risk)
  const own = p.author === me.principal;
  const withheld = [];
  if (open && me.may("proposals.review")) {
    if (own) withheld.push(`You (${me.principal}) wrote this change: another person reviews it.`);
    else actions.push(act("review", { verdict: "approve" }, "Review: approve"), act("review", { verdict: "request_changes" }, "Review: request changes"));
  }
  if (open && me.may("proposals.decide")) {
    if (own && p.risk_widening) withheld.push("It widens risk: its author may reject it, not approve it.");
    else actions.push(act("decide", { decision: "approve" }, "Decide: approve"));
    actions.push(act("decide", { decision: "reject" }, "Decide: reject"));
  }
  if (p.status === "approved" && me.may("proposals.activate")) {
    actions.push(h("button", { type: "button", dataset: { op: "activate" }, onclick: async () => {
      try {
        await api.post(`/proposals/${encodeURIComponent(p.id)}/activate`, { expectedRevision: p.revision });
        await page(main, me, id);
      } catch (error) { replace(message, notice("error", `Refused (${error.code}): ${error.message}`)); }
    } }, "Activate"));
  }
  replace(main,
    h("h1", {}, "Change proposal ", h("code", {}, p.id)),
    fields([
      ["Status", badge(p.status)],
      ["Kind", p.kind],
      ["Author", p.author],
      ["Message", p.message || "—"],
      ["Deployments", p.targets.map((t) => `${t.kind}.${t.name}`).join(", ")],
      ["Risk", p.risk_widening ? h("span", { class: "widening" }, "widens risk") : "does not widen risk"],
      ["Revision", String(p.revision)],
      ["Filed", time(p.created_at)],
      ["Decision", jsonView(p.decision)],
    ]),
    h("section", { "aria-labelledby": "diff-title" }, h("h2", { id: "diff-title" }, "Semantic diff"), diffView(p.diff || {})),
    h("section", { "aria-labelledby": "policy-title" }, h("h2", { id: "policy-title" }, "Policy"), jsonView(p.policy)),
    h("section", { "aria-labelledby": "reviews-title" }, h("h2", { id: "reviews-title" }, "Reviews"),
      view.reviews.length ? h("ul", {}, view.reviews.map((r) => h("li", {},
        `${r.reviewer || r.actor}: ${r.verdict}`, r.comment ? ` — ${r.comment}` : "", " ", time(r.created_at || r.at))))
        : h("p", { class: "muted" }, "No reviews yet.")),
    actions.length ? h("section", { class: "card", "aria-labelledby": "proposal-actions-title" },
      h("h2", { id: "proposal-actions-title" }, "Your part"),
      h("label", { for: "proposal-comment" }, "Comment"), comment,
      h("div", { class: "row" }, actions)) : h("p", { class: "muted" }, "Nothing for you to do on this proposal here."),
    withheld.length ? h("ul", { id: "proposal-withheld", class: "muted" }, withheld.map((why) => h("li", {}, why))) : null,
    message);
}
