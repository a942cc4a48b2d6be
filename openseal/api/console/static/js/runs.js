// The runs list: status, what each waits for, workflow and version, age; filters, a search
// by id, a page at a time, and a refresh every few seconds that keeps what is shown.
import * as api from "./api.js";
import { h, replace, badge, short, age, notice, idCode } from "./dom.js";

const STATUSES = ["queued", "running", "sleeping", "waiting_for_dependency", "waiting_for_agent",
  "waiting_for_approval", "waiting_for_event", "waiting_for_capacity", "paused", "completed", "failed", "canceled",
  "needs_attention"];
const PAGE = 100;
const REFRESH_MS = 10000;
const SINCE = [["", "any time"], ["3600", "the last hour"], ["86400", "the last day"], ["604800", "the last week"]];

function row(run) {
  return h("tr", { dataset: { run: run.id } },
    h("td", {}, h("a", { href: `#/runs/${encodeURIComponent(run.id)}` }, idCode(run.id))),
    h("td", {}, badge(run.status)),
    h("td", {}, run.reason || h("span", { class: "muted" }, "—")),
    h("td", {}, run.workflow, " ", short(run.version)),
    h("td", {}, run.current_state || "—"),
    h("td", {}, age(run.created_at)));
}

export async function list(main) {
  const params = new URLSearchParams(location.search);
  const status = h("select", { id: "filter-status", name: "status" },
    h("option", { value: "" }, "any"), STATUSES.map((value) => h("option", { value }, value)));
  const workflow = h("select", { id: "filter-workflow", name: "workflow" }, h("option", { value: "" }, "any"));
  const since = h("select", { id: "filter-since", name: "since" }, SINCE.map(([value, label]) => h("option", { value }, label)));
  const search = h("input", { id: "filter-search", type: "search", maxlength: 200, placeholder: "run id or its start" });
  const body = h("tbody", {});
  const count = h("p", { class: "muted", "aria-live": "polite" });
  const message = h("div", { id: "runs-message" });
  const more = h("button", { type: "button", class: "more", hidden: true }, "Show more");
  let shown = [];
  let after = null;

  function query(limit, cursor) {
    if (search.value.trim()) return { search: search.value.trim() };
    const q = { status: status.value, workflow: workflow.value, limit };
    if (since.value) q.since = new Date(Date.now() - Number(since.value) * 1000).toISOString();
    if (cursor) q.after = cursor;
    return q;
  }
  function draw(found) {
    const chosen = workflow.value;
    replace(workflow, h("option", { value: "" }, "any"), found.workflows.map((name) => h("option", { value: name }, name)));
    workflow.value = chosen;
    replace(body, shown.map(row));
    more.hidden = !after;
    count.textContent = `${shown.length} run(s)${after ? ", more below" : ""}`;
  }
  async function load(append) {
    try {
      const found = await api.get("/console/runs", query(PAGE, append ? after : null));
      shown = append ? shown.concat(found.runs) : found.runs;
      after = found.next_after;
      replace(message);
      draw(found);
    } catch (error) { replace(message, notice("error", `${error.code}: ${error.message}`)); }
  }
  // the refresh asks again for as many runs as are shown, so the list does not jump back to
  // its first page and the scroll position stays where the reader left it
  async function refresh() {
    if (document.hidden || !document.body.contains(body)) return;
    const found = await api.get("/console/runs", query(Math.min(Math.max(shown.length, PAGE), 1000)));
    shown = found.runs;
    after = found.next_after;
    draw(found);
  }
  status.value = params.get("status") || "";
  for (const control of [status, workflow, since]) control.addEventListener("change", () => load(false));
  search.addEventListener("change", () => load(false));
  more.addEventListener("click", () => load(true));
  replace(main,
    h("h1", {}, "Runs"),
    h("form", { class: "filters", role: "search", "aria-label": "Filter runs", onsubmit: (e) => { e.preventDefault(); load(false); } },
      h("label", { for: "filter-search" }, "Find"), search,
      h("label", { for: "filter-status" }, "Status"), status,
      h("label", { for: "filter-workflow" }, "Workflow"), workflow,
      h("label", { for: "filter-since" }, "Created in"), since),
    count, message,
    h("div", { class: "scroll" }, h("table", { id: "runs" },
      h("caption", { class: "sr-only" }, "Runs, newest first"),
      h("thead", {}, h("tr", {}, ["Run", "Status", "Waiting for", "Workflow and version", "State", "Age"]
        .map((label) => h("th", { scope: "col" }, label)))),
      body)),
    h("p", { class: "paging" }, more));
  await load(false);
  const again = () => refresh().catch(() => {});
  const timer = setInterval(again, REFRESH_MS);
  window.addEventListener("focus", again);  // coming back to the tab shows what changed
  return () => { clearInterval(timer); window.removeEventListener("focus", again); };
}
