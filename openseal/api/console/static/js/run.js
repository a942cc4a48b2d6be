// One run: commands with the revision shown, the graph with the current state, turns,
// actions, and the live event timeline.
import * as api from "./api.js";
import { h, replace, badge, short, time, fields, jsonView, notice, idCode } from "./dom.js";
import { draw } from "./graph.js";

const COMMANDS = [
  ["pause", "Pause", (run) => !["paused", "completed", "failed", "canceled"].includes(run.status)],
  ["resume", "Resume", (run) => run.status === "paused"],
  ["cancel", "Cancel", (run) => !["completed", "failed", "canceled"].includes(run.status)],
];

function eventLine(event) {
  const data = event.payload && typeof event.payload === "object" ? event.payload : {};
  const bits = ["state", "from", "to", "event", "status", "decision", "reason", "key", "outcome"]
    .filter((key) => data[key] !== undefined && data[key] !== null)
    .map((key) => `${key}=${typeof data[key] === "string" ? data[key] : JSON.stringify(data[key])}`);
  return h("li", { dataset: { seq: event.seq, type: event.type } },
    h("span", { class: "seq" }, `#${event.seq}`), " ", time(event.at), " ",
    h("strong", {}, event.type), " ", h("span", { class: "muted" }, event.actor),
    bits.length ? ` ${bits.join(" ")}` : "");
}

const link = (route, id, text) => h("a", { href: `#/${route}/${encodeURIComponent(id)}` }, text || idCode(id));

/** Field rows leading to the records this run is tied to (only those it has). */
function related(r) {
  if (!r) return [];
  const list = (items, route, label) => h("ul", { class: "inline" }, items.map((item) =>
    h("li", {}, link(route, item.id), " ", label(item))));
  return [
    ["Objective", link("objectives", r.objective_id)],
    r.parent_run_id ? ["Started by run", link("runs", r.parent_run_id)] : null,
    r.approvals.length ? ["Approval", h("span", { id: "run-approvals" }, list(r.approvals, "approvals", (a) => badge(a.status)))] : null,
    r.agent_requests.length ? ["Agent requests", list(r.agent_requests, "requests", (q) => [q.callee, " ", badge(q.status),
      q.child_run_id ? [" — run ", link("runs", q.child_run_id)] : ""])] : null,
    r.child_runs.length ? ["Child runs", list(r.child_runs, "runs", (c) => badge(c.status))] : null,
    r.event ? ["Waits for event", h("code", {}, r.event)] : null,
  ].filter(Boolean);
}

export async function page(main, me, runId) {
  const header = h("div", {});
  const controls = h("section", { "aria-labelledby": "commands-title" });
  const picture = h("section", { "aria-labelledby": "graph-heading", class: "card" });
  const outputsSection = h("section", { "aria-labelledby": "outputs-title" });
  const turnRows = h("tbody", {});
  const actionList = h("section", { "aria-labelledby": "actions-title" });
  const timeline = h("ol", { id: "timeline", class: "timeline", "aria-live": "polite" });
  let view = null;
  let refreshing = null;

  async function refresh() {
    view = await api.get(`/console/runs/${encodeURIComponent(runId)}`);
    const run = view.run;
    replace(header,
      h("h1", {}, "Run ", h("code", {}, run.id)),
      fields([
        ["Status", h("span", { id: "run-status" }, badge(run.status))],
        ["Waiting for", run.reason || "—"],
        ["Workflow", [run.workflow, " ", short(run.version)]],
        ["Current state", h("span", { id: "current-state" }, view.position.current || "—")],
        ["Revision", h("span", { id: "revision" }, String(run.revision))],
        ["Started", time(run.created_at)],
        ["Budget used", jsonView(view.budget_used)],
        ...related(view.related),
      ]));
    renderCommands(run);
    replace(picture, h("h2", { id: "graph-heading" }, "Graph"),
      h("div", { class: "scroll", id: "graph" }, draw(view.graph, view.position.current, view.trail)));
    const outputs = Object.entries(view.outputs || {});
    replace(outputsSection, h("h2", { id: "outputs-title" }, "State outputs"),
      outputs.length ? fields(outputs.map(([state, value]) => [state, jsonView(value)]))
        : h("p", { class: "muted" }, "No state has produced output yet."));
    replace(actionList, h("h2", { id: "actions-title" }, "Actions"),
      view.actions.length ? h("div", { class: "scroll" }, h("table", { id: "run-actions" },
        h("thead", {}, h("tr", {}, ["Key", "Skill", "Status", "Outcome"].map((l) => h("th", { scope: "col" }, l)))),
        h("tbody", {}, view.actions.map((action) => h("tr", {},
          h("td", {}, h("code", {}, action.key)),
          h("td", {}, action.skill),
          h("td", {}, badge(action.status)),
          h("td", {}, action.error ? action.error : jsonView(action.result))))))) : h("p", { class: "muted" }, "No actions yet."));
  }

  function renderCommands(run) {
    const reason = h("input", { id: "command-reason", type: "text", maxlength: 4000 });
    const message = h("div", { id: "command-message" });
    const buttons = COMMANDS.filter(([op, , applies]) => me.may(`runs.${op}`) && applies(run))
      .map(([op, label]) => h("button", { type: "button", dataset: { command: op },
        onclick: async () => {
          try {
            await api.post(`/runs/${encodeURIComponent(run.id)}/${op}`,
              { reason: reason.value || null, expectedRevision: run.revision });
            await refresh();
            document.getElementById("command-message").append(notice("ok", `${label}: done.`));
          } catch (error) {
            replace(message, notice("error", error.code === "stale_revision"
              ? `Refused: the run changed since this page showed revision ${run.revision}. Reload to see it.`
              : `Refused: ${error.message}`));
          }
        } }, label));
    replace(controls, h("h2", { id: "commands-title" }, "Commands"),
      buttons.length ? h("div", { class: "row" },
        h("label", { for: "command-reason" }, "Reason (optional)"), reason, buttons,
        h("span", { class: "muted" }, `sent with revision ${run.revision}`))
        : h("p", { class: "muted" }, "No command applies, or you may not use them here."),
      message);
  }

  function scheduleRefresh() {
    if (refreshing) return;
    refreshing = setTimeout(async () => { refreshing = null; try { await refresh(); } catch { /* shown on next load */ } }, 150);
  }

  // Turns come from the events: each turn.started opens one; the model and tool calls
  // recorded while it ran are counted on its row.
  let openTurn = null;
  function noteTurn(event) {
    const data = event.payload || {};
    if (event.type === "turn.started") {
      const calls = h("td", {}, "0");
      const row = h("tr", { dataset: { turn: data.seq } }, h("td", {}, String(data.seq)),
        h("td", {}, String(data.state)), h("td", {}, time(event.at)), calls);
      openTurn = { calls, count: 0 };
      turnRows.append(row);
    } else if (event.type === "activity.recorded" && openTurn) {
      openTurn.count += 1;
      openTurn.calls.textContent = String(openTurn.count);
    }
  }
  const turns = h("section", { "aria-labelledby": "turns-title" }, h("h2", { id: "turns-title" }, "Turns"),
    h("div", { class: "scroll" }, h("table", { id: "turns" },
      h("thead", {}, h("tr", {}, ["Turn", "State", "Started", "Model and tool calls recorded"].map((l) => h("th", { scope: "col" }, l)))),
      turnRows)));

  await refresh();
  replace(main, header, controls, picture, turns, outputsSection, actionList,
    h("section", { "aria-labelledby": "timeline-title" }, h("h2", { id: "timeline-title" }, "Events"), timeline));
  const stop = api.follow(runId, 0, (event) => {
    timeline.append(eventLine(event));
    noteTurn(event);
    scheduleRefresh();
  }, () => timeline.append(h("li", { class: "muted", id: "timeline-end" }, "The run has ended.")));
  return () => { stop(); if (refreshing) clearTimeout(refreshing); };
}
