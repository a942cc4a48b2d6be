// Objectives: what each is for, its priority and status, its runs by attempt; create one,
// pause, resume or retire it, and activate a draft.
import * as api from "./api.js";
import { h, replace, badge, time, fields, jsonView, notice, age, idCode } from "./dom.js";
import { command, field } from "./commands.js";
import { pager } from "./paging.js";

const STATUSES = ["draft", "active", "paused", "satisfied", "failed", "retired"];

export async function list(main, me) {
  const status = h("select", { id: "filter-objective-status" }, h("option", { value: "" }, "any"),
    STATUSES.map((value) => h("option", { value }, value)));
  const rows = h("tbody", {});
  const more = pager("/objectives", "objectives", () => ({ status: status.value }), (found, append) => {
    const made = found.map((o) => h("tr", { dataset: { objective: o.id } },
      h("td", {}, h("a", { href: `#/objectives/${encodeURIComponent(o.id)}` }, idCode(o.id))),
      h("td", {}, o.goal || h("span", { class: "muted" }, "—")),
      h("td", {}, o.workflow_name),
      h("td", {}, badge(o.status)),
      h("td", { class: "number" }, String(o.priority)),
      h("td", { class: "number" }, String(o.attempts)),
      h("td", {}, age(o.created_at))));
    if (append) rows.append(...made); else replace(rows, made);
  });
  status.addEventListener("change", () => more.reload());
  replace(main, h("h1", {}, "Objectives"),
    me.may("objectives.create") ? createForm(main, me) : null,
    h("form", { class: "filters", role: "search", "aria-label": "Filter objectives" },
      h("label", { for: "filter-objective-status" }, "Status"), status),
    h("div", { class: "scroll" }, h("table", { id: "objectives" },
      h("caption", { class: "sr-only" }, "Objectives, newest first"),
      h("thead", {}, h("tr", {}, ["Objective", "Goal", "Workflow", "Status", "Priority", "Runs", "Age"]
        .map((label) => h("th", { scope: "col" }, label)))),
      rows)),
    more.element);
  await more.reload();
}

function createForm(main, me) {
  const message = h("div", { id: "objective-create-message" });
  const [workflowLabel, workflow] = field("objective-workflow", "Workflow", { required: true, maxlength: 200 });
  const [goalLabel, goal] = field("objective-goal", "Goal");
  const [priorityLabel, priority] = field("objective-priority", "Priority", { type: "number", value: "0", step: "1" });
  const inputs = h("textarea", { id: "objective-inputs", rows: 4, maxlength: 100000 }, "{}");
  const draft = h("input", { id: "objective-draft", type: "checkbox" });
  const form = h("form", { id: "objective-create", class: "card", "aria-labelledby": "objective-create-title" },
    h("h2", { id: "objective-create-title" }, "New objective"),
    workflowLabel, workflow, goalLabel, goal, priorityLabel, priority,
    h("label", { for: "objective-inputs" }, "Inputs (JSON)"), inputs,
    h("p", {}, draft, " ", h("label", { for: "objective-draft" }, "Draft: create it without starting a run")),
    h("button", { type: "submit", class: "primary" }, "Create"), message);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    let parsed;
    try { parsed = JSON.parse(inputs.value || "{}"); } catch (error) {
      replace(message, notice("error", `The inputs are not JSON: ${error.message}`)); return;
    }
    try {
      const made = await api.post("/objectives", { workflow: workflow.value.trim(), inputs: parsed,
        goal: goal.value.trim() || null, priority: Number(priority.value || 0), draft: draft.checked });
      location.hash = `#/objectives/${encodeURIComponent(made.objective.id)}`;
    } catch (error) { replace(message, notice("error", `Refused (${error.code}): ${error.message}`)); }
  });
  return form;
}

export async function page(main, me, id) {
  const view = await api.get(`/objectives/${encodeURIComponent(id)}`);
  const o = view.objective;
  const message = h("div", { id: "objective-message" });
  const reason = h("input", { id: "objective-reason", type: "text", maxlength: 4000 });
  const reload = () => page(main, me, id);
  const steer = (label, status) => command({ label, op: status, message, then: reload,
    path: `/objectives/${encodeURIComponent(o.id)}/status`,
    body: () => ({ status, reason: reason.value.trim() || null, expectedRevision: o.revision }) });
  const commands = [];
  if (me.may("objectives.set_status")) {
    if (o.status === "active") commands.push(steer("Pause", "paused"));
    if (o.status === "paused") commands.push(steer("Resume", "active"));
    if (!["retired", "satisfied", "failed"].includes(o.status)) commands.push(steer("Retire", "retired"));
  }
  if (o.status === "draft" && me.may("objectives.activate")) {
    commands.push(command({ label: "Activate", message, then: reload,
      path: `/objectives/${encodeURIComponent(o.id)}/activate`,
      body: () => ({ reason: reason.value.trim() || null, expectedRevision: o.revision }) }));
  }
  replace(main,
    h("h1", {}, "Objective ", h("code", { class: "id" }, o.id)),
    fields([
      ["Goal", o.goal || "—"],
      ["Status", h("span", { id: "objective-status" }, badge(o.status))],
      ["Workflow", o.workflow_name],
      ["Priority", String(o.priority)],
      ["Owner", o.owner || "—"],
      ["Scope", o.scope],
      ["Created", [time(o.created_at), o.created_by ? ` by ${o.created_by}` : ""]],
      ["Retries", o.retry ? `up to ${o.retry.max_attempts} attempts` : "one run only"],
      ["Inputs", Object.keys(o.inputs || {}).length ? jsonView(o.inputs) : "none"],
    ]),
    h("section", { "aria-labelledby": "objective-runs-title" },
      h("h2", { id: "objective-runs-title" }, "Runs by attempt"),
      view.runs.length ? h("div", { class: "scroll" }, h("table", { id: "objective-runs" },
        h("thead", {}, h("tr", {}, ["Attempt", "Run", "Status", "State", "Started"].map((l) => h("th", { scope: "col" }, l)))),
        h("tbody", {}, view.runs.map((r, index) => h("tr", {},
          h("td", { class: "number" }, String(r.attempt || index + 1)),
          h("td", {}, h("a", { href: `#/runs/${encodeURIComponent(r.id)}` }, idCode(r.id))),
          h("td", {}, badge(r.status)),
          h("td", {}, r.current_state || "—"),
          h("td", {}, time(r.created_at)))))))
        : h("p", { class: "muted" }, o.status === "draft" ? "A draft starts no run until it is activated." : "No runs.")),
    commands.length ? h("section", { class: "card", "aria-labelledby": "objective-steer-title" },
      h("h2", { id: "objective-steer-title" }, "Steer"),
      h("label", { for: "objective-reason" }, "Reason"), reason,
      h("div", { class: "row" }, commands)) : null,
    message);
}
