// Change proposals: the semantic diff with risk-widening lines marked, the policy, reviews,
// the review / decide / activate buttons the caller may use, and a replay of recorded runs
// through the proposed version.
import * as api from "./api.js";
import { h, replace, badge, time, fields, jsonView, notice, age, idCode } from "./dom.js";

export async function list(main) {
  const found = (await api.get("/proposals")).proposals;
  replace(main, h("h1", {}, "Change proposals"),
    found.length ? h("div", { class: "scroll" }, h("table", { id: "proposals" },
      h("thead", {}, h("tr", {}, ["Proposal", "Deployments", "Status", "Risk", "Author", "Age"].map((l) => h("th", { scope: "col" }, l)))),
      h("tbody", {}, found.map((p) => h("tr", {},
        h("td", {}, h("a", { href: `#/proposals/${encodeURIComponent(p.id)}` }, idCode(p.id)), p.message ? ` ${p.message}` : ""),
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

const VERDICTS = { same: "same", diverges: "diverges", needs_input: "needs new input", unsupported: "not replayed" };

function verdictLine(run) {
  if (run.verdict === "same") return "same";
  return `${VERDICTS[run.verdict] || run.verdict} at ${run.state}: ${run.why}`;
}

const MOVES = { would_move: "would move", migrated: "moved", blocked: "blocked", stays: "stays" };

// The waiting runs a migration moves (or, in a dry run, would move): from which state to which
// version and state, whether the run's approval stands or is asked again, and why a run stays.
function movePlan(moves, id) {
  if (!moves.length) return h("p", { id, class: "muted" }, "No waiting run of the earlier versions is covered.");
  return h("div", { class: "scroll" }, h("table", { id },
    h("caption", {}, "Waiting runs the migration moves at activation"),
    h("thead", {}, h("tr", {}, ["Run", "From", "To", "Outcome", "Approval", "Why"].map((l) => h("th", { scope: "col" }, l)))),
    h("tbody", {}, moves.map((m) => h("tr", { dataset: { run: m.run_id, outcome: m.outcome } },
      h("td", {}, h("a", { href: `#/runs/${encodeURIComponent(m.run_id)}` }, h("code", {}, m.run_id))),
      h("td", {}, h("code", {}, `${m.from_version.slice(0, 12)}:${m.from_state || "—"}`)),
      h("td", {}, h("code", {}, `${m.to_version.slice(0, 12)}:${m.to_state || "—"}`)),
      h("td", {}, MOVES[m.outcome] || m.outcome),
      h("td", {}, m.approval === "withdrawn" ? "asked again" : m.approval === "kept" ? "stands" : "—"),
      h("td", {}, m.reason || "—"))))));
}

function replayReport(report) {
  const s = report.summary;
  const counts = [`${s.same} same`, `${s.diverges} diverge`, `${s.needs_input} need new input`];
  if (s.unsupported) counts.push(`${s.unsupported} not replayed`);
  return h("div", {},
    h("p", { id: "replay-summary" }, `${s.runs} run(s) replayed: ${counts.join(", ")}.`),
    s.groups.length ? h("ul", { id: "replay-groups" }, s.groups.map((g) => h("li",
      { dataset: { verdict: g.verdict, state: g.state } },
      h("strong", {}, `${VERDICTS[g.verdict] || g.verdict} at ${g.state}`), `: ${g.runs} run(s)`,
      h("ul", {},
        g.reasons.map((r) => h("li", {}, `${r.why} (${r.runs})`)),
        g.risk_widening.map((line) => h("li", { class: "widening" }, h("strong", {}, "⚠ widens risk: "), line))))))
      : null,
    report.runs.length ? h("div", { class: "scroll" }, h("table", { id: "replay-runs" },
      h("thead", {}, h("tr", {}, ["Run", "Status", "Verdict"].map((l) => h("th", { scope: "col" }, l)))),
      h("tbody", {}, report.runs.map((run) => h("tr", { dataset: { verdict: run.verdict } },
        h("td", {}, h("a", { href: `#/runs/${encodeURIComponent(run.run)}` }, h("code", {}, run.run))),
        h("td", {}, badge(run.status)),
        h("td", {}, verdictLine(run)))))))
      : h("p", { class: "muted" }, "No recorded runs of these workflows were selected."),
    report.migration ? h("section", { "aria-labelledby": "replay-moves-title" },
      h("h3", { id: "replay-moves-title" }, "Move plan"), movePlan(report.migration, "replay-moves")) : null);
}

// The migration's dry run: which waiting runs would move where, changing nothing.
function moveSection(p) {
  const out = h("div", { id: "move-plan", "aria-live": "polite" });
  const start = h("button", { type: "button", id: "move-plan-start", onclick: async () => {
    replace(out, h("p", { class: "muted" }, "Reading the waiting runs…"));
    try {
      const done = await api.post(`/proposals/${encodeURIComponent(p.id)}/migrate`, { dryRun: true });
      replace(out, movePlan(done.migration.moves, "move-plan-runs"));
    } catch (error) {
      replace(out, error.code === "no_migration"
        ? h("p", { class: "muted" }, "This change carries no migration: waiting runs stay on their versions.")
        : notice("error", `Refused (${error.code}): ${error.message}`));
    }
  } }, "Show the move plan");
  return h("section", { "aria-labelledby": "move-plan-title" },
    h("h2", { id: "move-plan-title" }, "Migration of waiting runs"),
    h("p", { class: "muted" }, "A dry run of the migration this change carries: nothing moves until it is approved and activated."),
    h("div", { class: "row" }, start),
    out);
}

function replaySection(p) {
  const out = h("div", { id: "replay-report", "aria-live": "polite" });
  const choice = h("select", { id: "replay-selection" },
    h("option", { value: "since=1d" }, "the last day's runs"),
    h("option", { value: "since=7d" }, "the last week's runs"),
    h("option", { value: "runs=100" }, "the newest 100 runs"));
  const start = h("button", { type: "button", id: "replay-start", onclick: async () => {
    const [key, value] = choice.value.split("=");
    replace(out, h("p", { class: "muted" }, "Replaying…"));
    try {
      const body = { [key]: key === "runs" ? Number(value) : value };
      replace(out, replayReport(await api.post(`/proposals/${encodeURIComponent(p.id)}/replay`, body)));
    } catch (error) {
      replace(out, notice("error", `Refused (${error.code}): ${error.message}`));
    }
  } }, "Replay");
  return h("section", { "aria-labelledby": "replay-title" },
    h("h2", { id: "replay-title" }, "Replay against recorded runs"),
    h("p", { class: "muted" }, "Recorded runs re-driven through the proposed version, with their recorded model and tool results, decisions and events: no model call, no tool call, no effect."),
    h("div", { class: "row" }, h("label", { for: "replay-selection" }, "Which runs"), choice, start),
    out);
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
    me.may("proposals.replay") ? replaySection(p) : null,
    p.targets.some((t) => t.kind === "workflow") && me.may("proposals.migrate") ? moveSection(p) : null,
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
