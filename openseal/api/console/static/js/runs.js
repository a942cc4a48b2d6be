// The runs list: status, what each waits for, workflow and version, age; filters.
import * as api from "./api.js";
import { h, replace, badge, short, age } from "./dom.js";

const STATUSES = ["queued", "running", "sleeping", "waiting_for_dependency", "waiting_for_agent",
  "waiting_for_approval", "waiting_for_event", "paused", "completed", "failed", "canceled",
  "needs_attention"];

export async function list(main) {
  const params = new URLSearchParams(location.search);
  const status = h("select", { id: "filter-status", name: "status" },
    h("option", { value: "" }, "any"), STATUSES.map((value) => h("option", { value }, value)));
  const workflow = h("select", { id: "filter-workflow", name: "workflow" }, h("option", { value: "" }, "any"));
  const body = h("tbody", {});
  const count = h("p", { class: "muted", "aria-live": "polite" });
  async function load() {
    const found = await api.get("/console/runs", { status: status.value, workflow: workflow.value });
    const chosen = workflow.value;
    replace(workflow, h("option", { value: "" }, "any"),
      found.workflows.map((name) => h("option", { value: name }, name)));
    workflow.value = chosen;
    replace(body, found.runs.map((run) => h("tr", { dataset: { run: run.id } },
      h("td", {}, h("a", { href: `#/runs/${encodeURIComponent(run.id)}` }, h("code", { class: "id" }, run.id))),
      h("td", {}, badge(run.status)),
      h("td", {}, run.reason || h("span", { class: "muted" }, "—")),
      h("td", {}, run.workflow, " ", short(run.version)),
      h("td", {}, run.current_state || "—"),
      h("td", {}, age(run.created_at)))));
    count.textContent = `${found.runs.length} run(s)`;
  }
  status.value = params.get("status") || "";
  status.addEventListener("change", load);
  workflow.addEventListener("change", load);
  replace(main,
    h("h1", {}, "Runs"),
    h("form", { class: "filters", role: "search", "aria-label": "Filter runs" },
      h("label", { for: "filter-status" }, "Status"), status,
      h("label", { for: "filter-workflow" }, "Workflow"), workflow),
    count,
    h("div", { class: "scroll" }, h("table", { id: "runs" },
      h("caption", { class: "sr-only" }, "Runs, newest first"),
      h("thead", {}, h("tr", {}, ["Run", "Status", "Waiting for", "Workflow and version", "State", "Age"]
        .map((label) => h("th", { scope: "col" }, label)))),
      body)));
  await load();
}
