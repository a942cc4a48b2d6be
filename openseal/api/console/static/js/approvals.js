// The approvals inbox and the approval page: every field of the exact proposal and its hash,
// decided with the hash the page displayed, so a proposal changed since is refused visibly.
import * as api from "./api.js";
import { h, replace, badge, short, time, fields, jsonView, notice, age, idCode } from "./dom.js";

function mine(me, approval) {
  if (!me.via_token) return true;
  const approvers = approval.approvers || [];
  return approvers.length === 0 || approvers.some((name) =>
    name === me.principal || me.approver_roles.includes(name));
}

/** What an approval asks for, at a glance: the skill, the amount, the plain arguments. */
function asks(glance) {
  const spend = glance.spend ? `${glance.spend.amount}${glance.spend.currency ? ` ${glance.spend.currency}` : ""}` : null;
  // words before numbers (a vendor says more than a quantity), minus what the spend shows
  const spent = glance.spend ? [glance.spend.amount, glance.spend.currency] : [];
  const args = Object.entries(glance.args || {}).filter(([, value]) => !spent.includes(value))
    .sort(([, a], [, b]) => (typeof a === "string" ? 0 : 1) - (typeof b === "string" ? 0 : 1))
    .slice(0, 4).map(([key, value]) => `${key}=${value}`).join(", ");
  return [glance.skill ? h("strong", {}, glance.skill) : null, spend ? [" ", h("span", { class: "amount" }, spend)] : null,
    args ? [h("br", {}), h("span", { class: "muted" }, args)] : null,
    glance.verified === false ? [h("br", {}), h("strong", {}, "proposal does not match its hash")] : null];
}

function glanceRow(approval, glance) {
  return h("tr", { dataset: { approval: approval.id } },
    h("td", {}, h("a", { href: `#/approvals/${encodeURIComponent(approval.id)}` }, approval.proposal_name, " ", idCode(approval.id))),
    h("td", {}, asks(glance)),
    h("td", {}, h("a", { href: `#/runs/${encodeURIComponent(approval.run_id)}` }, h("code", { class: "id" }, approval.run_id))),
    h("td", {}, (approval.approvers || []).join(", ") || "anyone the authority knows"),
    h("td", {}, badge(approval.status)),
    h("td", {}, age(approval.created_at)),
    h("td", {}, time(approval.expires_at)));
}

export async function inbox(main, me) {
  const only = h("input", { id: "only-mine", type: "checkbox", checked: true });
  const status = h("select", { id: "approval-status" },
    ["pending", "approved", "rejected", "changes_requested", "expired", "canceled"]
      .map((value) => h("option", { value }, value)));
  const body = h("tbody", {});
  async function load() {
    const page = await api.get("/console/approvals", { status: status.value });
    const found = page.approvals.filter((approval) => !only.checked || mine(me, approval));
    replace(body, found.length ? found.map((approval) => glanceRow(approval, page.glance[approval.id] || {}))
      : h("tr", {}, h("td", { colspan: 7, class: "muted" }, "Nothing here.")));
  }
  only.addEventListener("change", load);
  status.addEventListener("change", load);
  replace(main, h("h1", {}, "Approvals"),
    me.may("approvals.decide") ? null : notice("info", `You cannot decide approvals here: ${me.why("approvals.decide")}`),
    h("form", { class: "filters", "aria-label": "Filter approvals" },
      h("label", { for: "approval-status" }, "Status"), status,
      only, h("label", { for: "only-mine" }, "Only those I may decide")),
    h("div", { class: "scroll" }, h("table", { id: "approvals" },
      h("thead", {}, h("tr", {}, ["Proposal", "Asks for", "Run", "Approvers", "Status", "Age", "Expires"].map((l) => h("th", { scope: "col" }, l)))),
      body)));
  await load();
}

function flatten(value, prefix, rows) {
  if (value !== null && typeof value === "object" && !Array.isArray(value) && Object.keys(value).length) {
    for (const key of Object.keys(value).sort()) flatten(value[key], prefix ? `${prefix}.${key}` : key, rows);
  } else {
    rows.push([prefix, typeof value === "string" ? value : JSON.stringify(value)]);
  }
  return rows;
}

function grants(skill) {
  if (!skill.grants.length) return h("p", { class: "muted" }, "No grant found in the pinned workflow version.");
  return h("ul", { class: "grants" }, skill.grants.map((grant) => h("li", {},
    `granted by binding ${grant.granted_by} to ${grant.grantee}`,
    grant.max_risk ? ` (risk ceiling ${grant.max_risk})` : "",
    grant.constraints.length ? h("ul", {}, grant.constraints.map((c) => h("li", { class: c.satisfied ? "ok" : "bad" },
      c.satisfied === true ? "✓ satisfied: " : c.satisfied === false ? "✗ not satisfied: " : "? not evaluated: ",
      h("code", {}, c.source)))) : h("span", { class: "muted" }, " — no argument constraints"))));
}

export async function page(main, me, ref) {
  const view = await api.get(`/console/approvals/${encodeURIComponent(ref)}`);
  const { approval, proposal } = view;
  const shownHash = view.hash;
  const rows = flatten(proposal, "", []);
  const outcome = h("div", { id: "decision-message" });
  const decided = approval.status !== "pending";
  replace(main,
    h("h1", {}, "Approval of ", h("code", {}, approval.proposal_name)),
    fields([
      ["Status", h("span", { id: "approval-status" }, badge(approval.status))],
      ["Proposal hash", h("code", { id: "proposal-hash", class: "hash" }, shownHash)],
      ["Content verified", view.verified ? "yes: the stored proposal matches its hash" : `NO: ${view.unverified_reason}`],
      ["Run", h("a", { href: `#/runs/${encodeURIComponent(approval.run_id)}` }, h("code", {}, approval.run_id))],
      ["Skill", [view.skill.name, " ", short(view.skill.digest), view.skill.effect ? ` — effect ${view.skill.effect}` : ""]],
      ["Actor", proposal.actor],
      ["Approvers", (approval.approvers || []).join(", ") || "anyone the authority knows"],
      ["Expires", time(approval.expires_at)],
      ["Spends", jsonView(proposal.spend)],
      ["Run budget used so far", jsonView(view.run.budget_used)],
      decided ? ["Decided", `${approval.decision} by ${approval.decided_by}${approval.reason ? `: ${approval.reason}` : ""}`] : null,
    ].filter(Boolean)),
    h("section", { "aria-labelledby": "proposal-title" },
      h("h2", { id: "proposal-title" }, "The exact proposal"),
      h("div", { class: "scroll" }, h("table", { id: "proposal-fields" },
        h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Field"), h("th", { scope: "col" }, "Value"))),
        h("tbody", {}, rows.map(([name, value]) => h("tr", { dataset: { field: name } },
          h("th", { scope: "row" }, h("code", {}, name)), h("td", {}, value))))))),
    h("section", { "aria-labelledby": "grants-title" },
      h("h2", { id: "grants-title" }, "Binding constraints"), grants(view.skill)),
    decided ? null : decisionForm(me, view, shownHash, outcome),
    outcome);
}

function decisionForm(me, view, shownHash, outcome) {
  if (!me.may("approvals.decide") || !view.may_decide) {
    return notice("info", me.may("approvals.decide")
      ? view.why_not
      : `Decisions are not available to you here: ${me.why("approvals.decide")}`);
  }
  const reason = h("textarea", { id: "decision-reason", required: true, rows: 3, maxlength: 4000 });
  const form = h("form", { id: "decision", class: "card", "aria-labelledby": "decide-title" },
    h("h2", { id: "decide-title" }, "Decide"),
    h("p", {}, "Your decision is bound to hash ", h("code", {}, shownHash.slice(0, 16)), "…: if the proposal changed since this page loaded, it is refused."),
    h("label", { for: "decision-reason" }, "Reason (required)"), reason,
    h("div", { class: "row" },
      h("button", { type: "submit", value: "approve", class: "primary" }, "Approve"),
      h("button", { type: "submit", value: "request_changes" }, "Request changes"),
      h("button", { type: "submit", value: "reject", class: "danger" }, "Reject")));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const decision = event.submitter ? event.submitter.value : "approve";
    if (!reason.value.trim()) { replace(outcome, notice("error", "A reason is required.")); reason.focus(); return; }
    for (const button of form.querySelectorAll("button")) button.disabled = true;
    try {
      const done = await api.post(`/approvals/${encodeURIComponent(view.approval.id)}/decision`,
        // the hash sent is the one on the page, so what was decided is what was displayed
        { decision, hash: document.getElementById("proposal-hash").textContent, reason: reason.value.trim() });
      form.remove();
      replace(outcome, notice("ok", `Recorded: ${done.approval.decision} by ${done.approval.decided_by}. The run continues.`),
        h("p", {}, h("a", { href: `#/runs/${encodeURIComponent(view.approval.run_id)}` }, "Watch the run")));
      document.getElementById("approval-status").replaceChildren(badge(done.approval.status));
    } catch (error) {
      for (const button of form.querySelectorAll("button")) button.disabled = false;
      const stale = error.code === "hash_mismatch" || error.code === "already_decided";
      replace(outcome, notice("error", stale
        ? `Refused (${error.code}): the proposal changed or was decided since this page showed hash ${shownHash.slice(0, 16)}…. Nothing was approved. Reload to see what is pending now. (${error.message})`
        : `Refused (${error.code}): ${error.message}`));
    }
  });
  return form;
}
