// Agent requests: one agent's request of another — accept, decline, clarify, complete,
// review — each offered only at the step where the request is.
import * as api from "./api.js";
import { h, replace, badge, time, fields, jsonView, notice, age, idCode, actorLink } from "./dom.js";
import { command } from "./commands.js";

const STATUSES = ["requested", "accepted", "clarification_requested", "completed", "completion_reviewed", "declined",
  "failed", "expired", "canceled"];

export async function list(main) {
  const status = h("select", { id: "filter-request-status" }, h("option", { value: "" }, "any"),
    STATUSES.map((value) => h("option", { value }, value)));
  const rows = h("tbody", {});
  const empty = h("p", { id: "requests-empty", class: "muted", hidden: true }, "No agent requests.");
  async function load() {
    const found = (await api.get("/agent-requests", { status: status.value })).agent_requests;
    empty.hidden = found.length > 0;
    replace(rows, found.map((r) => h("tr", { dataset: { request: r.id } },
      h("td", {}, h("a", { href: `#/requests/${encodeURIComponent(r.id)}` }, idCode(r.id))),
      h("td", {}, actorLink(r.callee)),
      h("td", {}, badge(r.status)),
      h("td", {}, h("a", { href: `#/runs/${encodeURIComponent(r.caller_run_id)}` }, h("code", { class: "id" }, r.caller_run_id))),
      h("td", {}, age(r.created_at)))));
  }
  status.addEventListener("change", load);
  replace(main, h("h1", {}, "Agent requests"),
    h("form", { class: "filters", role: "search", "aria-label": "Filter agent requests" },
      h("label", { for: "filter-request-status" }, "Status"), status),
    h("div", { class: "scroll" }, h("table", { id: "requests" },
      h("caption", { class: "sr-only" }, "Agent requests, newest first"),
      h("thead", {}, h("tr", {}, ["Request", "Asks", "Status", "From run", "Age"].map((l) => h("th", { scope: "col" }, l)))),
      rows)), empty);
  await load();
}

/** What each step sends, from the one text field the page has. */
const STEPS = {
  accept: { label: "Accept", body: () => ({}) },
  decline: { label: "Decline", body: (text) => ({ reason: text }), needs: "a reason" },
  ask: { label: "Ask a question", body: (text) => ({ question: text }), needs: "the question" },
  clarify: { label: "Answer", body: (text) => ({ answer: text }), needs: "the answer" },
  complete: { label: "Complete", body: (text) => ({ response: parsed(text) }), needs: "the result" },
  accept_review: { step: "review", label: "Accept the result", body: (text) => ({ verdict: "accept", reason: text || null }) },
  send_back: { step: "review", label: "Send back", body: (text) => ({ verdict: "send_back", reason: text }), needs: "why" },
};

function parsed(text) {
  try { return JSON.parse(text); } catch { return text; }
}

function stepsFor(r) {
  if (r.status === "requested") return ["accept", "decline", "ask"];
  if (r.status === "clarification_requested") return ["clarify"];
  if (r.status === "accepted") return r.child_run_id ? [] : ["complete", "ask"];
  if (r.status === "completed" && r.request && r.request.review && !(r.review || []).some((v) => v.verdict === "accept")) {
    return ["accept_review", "send_back"];
  }
  return [];
}

export async function page(main, me, id) {
  const r = (await api.get(`/agent-requests/${encodeURIComponent(id)}`)).agent_request;
  const message = h("div", { id: "request-message" });
  const text = h("textarea", { id: "request-text", rows: 3, maxlength: 4000 });
  const withheld = stepsFor(r).filter((name) => !me.may(`agent_requests.${STEPS[name].step || name}`))
    .map((name) => `${STEPS[name].label}: ${me.why(`agent_requests.${STEPS[name].step || name}`)}`);
  const buttons = stepsFor(r).filter((name) => me.may(`agent_requests.${STEPS[name].step || name}`))
    .map((name) => {
      const step = STEPS[name];
      return command({ label: step.label, op: name, message, then: () => page(main, me, id),
        path: `/agent-requests/${encodeURIComponent(r.id)}/${step.step || name}`,
        body: () => {
          if (step.needs && !text.value.trim()) throw new Error(`Write ${step.needs} first.`);
          return step.body(text.value.trim());
        } });
    });
  const rounds = Array.isArray(r.clarification) ? r.clarification : [];
  replace(main, h("h1", {}, "Agent request ", h("code", { class: "id" }, r.id)),
    fields([
      ["Status", h("span", { id: "request-status" }, badge(r.status))],
      ["Asks", actorLink(r.callee)],
      ["From run", h("a", { href: `#/runs/${encodeURIComponent(r.caller_run_id)}` }, h("code", { class: "id" }, r.caller_run_id))],
      ["Child run", r.child_run_id ? h("a", { href: `#/runs/${encodeURIComponent(r.child_run_id)}` }, h("code", { class: "id" }, r.child_run_id)) : "—"],
      ["Request", jsonView(r.request)],
      ["Result", r.response === null || r.response === undefined ? "—" : jsonView(r.response)],
      ["Deadline", time(r.deadline)],
      ["Created", time(r.created_at)],
    ]),
    rounds.length ? h("section", { "aria-labelledby": "rounds-title" }, h("h2", { id: "rounds-title" }, "Clarification"),
      h("ol", {}, rounds.map((q) => h("li", {}, `${q.asked_by || "?"} asked: ${q.question}`,
        q.answer !== undefined && q.answer !== null ? [h("br", {}), `${q.answered_by || "?"} answered: `, jsonView(q.answer)] : "")))) : null,
    buttons.length ? h("section", { class: "card", "aria-labelledby": "request-steps-title" },
      h("h2", { id: "request-steps-title" }, "Your part"),
      h("label", { for: "request-text" }, "Text (reason, question, answer or result)"), text,
      h("div", { class: "row" }, buttons)) : h("p", { class: "muted" }, "Nothing for you to do on this request now."),
    withheld.length ? h("ul", { id: "request-withheld", class: "muted" }, withheld.map((why) => h("li", {}, why))) : null,
    message);
}
