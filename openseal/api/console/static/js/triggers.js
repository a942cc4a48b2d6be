// Triggers: what fires each, its next occurrence and last firings; pause and resume.
import * as api from "./api.js";
import { h, replace, badge, time, fields, jsonView } from "./dom.js";
import { command, field } from "./commands.js";

export async function list(main) {
  const found = (await api.get("/triggers")).triggers;
  replace(main, h("h1", {}, "Triggers"),
    found.length ? h("div", { class: "scroll" }, h("table", { id: "triggers" },
      h("caption", { class: "sr-only" }, "Deployed triggers"),
      h("thead", {}, h("tr", {}, ["Trigger", "Status", "Fires on", "Workflow", "Next", "Last firing"]
        .map((label) => h("th", { scope: "col" }, label)))),
      h("tbody", {}, found.map((t) => h("tr", { dataset: { trigger: t.name } },
        h("td", {}, h("a", { href: `#/triggers/${encodeURIComponent(t.name)}` }, t.name)),
        h("td", {}, badge(t.status)),
        h("td", {}, h("code", {}, t.fires_on)),
        h("td", {}, t.workflow),
        h("td", {}, time(t.next_occurrence)),
        h("td", {}, t.last_firing ? [t.last_firing.outcome, " ", time(t.last_firing.occurred_at)] : h("span", { class: "muted" }, "never")))))))
      : h("p", { class: "muted" }, "No trigger is deployed."));
}

export async function page(main, me, name) {
  const view = await api.get(`/triggers/${encodeURIComponent(name)}`);
  const t = view.trigger;
  const message = h("div", { id: "trigger-message" });
  const [reasonLabel, reason] = field("trigger-reason", "Reason");
  const steer = (label, status) => command({ label, op: status, message, then: () => page(main, me, name),
    path: `/triggers/${encodeURIComponent(t.name)}/status`,
    body: () => ({ status, reason: reason.value.trim() || null }) });
  const commands = [];
  if (me.may("triggers.set_status")) {
    if (t.status === "active") commands.push(steer("Pause", "paused"));
    if (t.status === "paused") commands.push(steer("Resume", "active"));
  }
  replace(main, h("h1", {}, "Trigger ", t.name),
    fields([
      ["Status", h("span", { id: "trigger-status" }, badge(t.status))],
      ["Fires on", h("code", {}, t.fires_on)],
      ["Starts", t.workflow],
      ["Next occurrence", time(t.next_occurrence)],
      ["Overlap", t.overlap],
      ["Catch-up", t.catch_up],
    ]),
    h("section", { "aria-labelledby": "firings-title" }, h("h2", { id: "firings-title" }, "Last firings"),
      view.firings.length ? h("div", { class: "scroll" }, h("table", { id: "firings" },
        h("thead", {}, h("tr", {}, ["Occurred", "Source", "Outcome", "Objective", "Detail"].map((l) => h("th", { scope: "col" }, l)))),
        h("tbody", {}, view.firings.map((f) => h("tr", {},
          h("td", {}, time(f.occurred_at)),
          h("td", {}, f.source),
          h("td", {}, badge(f.outcome)),
          h("td", {}, f.objective_id ? h("a", { href: `#/objectives/${encodeURIComponent(f.objective_id)}` }, h("code", { class: "id" }, f.objective_id)) : "—"),
          h("td", {}, f.detail || (f.inputs ? jsonView(f.inputs) : "—")))))))
        : h("p", { class: "muted" }, "It has not fired yet.")),
    commands.length ? h("section", { class: "card", "aria-labelledby": "trigger-steer-title" },
      h("h2", { id: "trigger-steer-title" }, "Steer"), reasonLabel, reason, h("div", { class: "row" }, commands))
      : null,
    message);
}
