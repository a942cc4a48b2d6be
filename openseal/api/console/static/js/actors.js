// An agent or a team now: paused or not, the runs it is doing (in your scopes), its open
// requests, the concurrency slots it holds and the runs waiting for one, its runs' calls in
// flight to capped skills (each holding a slot of the skill's cap); pause and resume
// (what `openseal agents|teams show|pause|resume` do).
import * as api from "./api.js";
import { h, replace, badge, time, fields, notice, idCode } from "./dom.js";
import { command } from "./commands.js";

const runLink = (id) => h("a", { href: `#/runs/${encodeURIComponent(id)}` }, idCode(id));
const none = (text) => h("span", { class: "muted" }, text);

/** #/agents/NAME and #/teams/NAME: ``kind`` is "agent" or "team". */
export function page(kind) {
  return async (main, me, name) => {
    const plural = `${kind}s`;
    const path = `/${plural}/${encodeURIComponent(name)}`;
    const view = (await api.get(path))[kind];
    const message = h("div", { id: "actor-message" });
    const reload = () => page(kind)(main, me, name);
    const op = view.paused ? "resume" : "pause";
    const withheld = [];
    let button = null;
    if (!me.may(`${plural}.${op}`)) {
      withheld.push(`You cannot ${op} it: ${me.why(`${plural}.${op}`)}.`);
    } else if (!me.scopes.includes("*")) {
      withheld.push(`You cannot ${op} it: that changes work in every scope, and your token reaches `
        + `only ${me.scopes.join(", ") || "none"} (it needs *).`);
    } else {
      button = command({ label: view.paused ? "Resume" : "Pause", op, message, path: `${path}/${op}`,
        then: reload });
    }
    replace(main,
      h("h1", {}, kind === "agent" ? "Agent " : "Team ", h("code", {}, name)),
      fields([
        ["Status", view.paused
          ? [badge("paused"), " by ", view.paused_by, " ", time(view.paused_at)]
          : badge("active")],
      ]),
      h("p", { id: "actor-controls" }, button),
      withheld.length ? h("ul", { id: "actor-withheld", class: "muted" }, withheld.map((why) => h("li", {}, why))) : null,
      message,
      h("h2", {}, "Runs it is doing"),
      view.runs.length ? h("div", { class: "scroll" }, h("table", { id: "actor-runs" },
        h("caption", { class: "sr-only" }, "Runs not ended"),
        h("thead", {}, h("tr", {}, ["Run", "Status", "State", "Scope", "Waiting for"].map((l) => h("th", { scope: "col" }, l)))),
        h("tbody", {}, view.runs.map((r) => h("tr", { dataset: { run: r.run_id } },
          h("td", {}, runLink(r.run_id)),
          h("td", {}, badge(r.status)),
          h("td", {}, r.current_state || "—"),
          h("td", {}, r.scope),
          h("td", {}, r.waiting || none("—")))))))
        : h("p", { class: "muted" }, "No run of yours is under way."),
      h("h2", {}, "Open requests"),
      view.requests.length ? h("ul", { id: "actor-requests", class: "inline" }, view.requests.map((id) =>
        h("li", {}, h("a", { href: `#/requests/${encodeURIComponent(id)}` }, idCode(id)))))
        : h("p", { class: "muted" }, "No open request."),
      h("h2", {}, "Concurrency slots held"),
      view.slots.length ? h("ul", { id: "actor-slots" }, view.slots.map((s) =>
        h("li", {}, runLink(s.run_id), " since ", time(s.taken_at))))
        : h("p", { class: "muted" }, "None held."),
      h("h2", {}, "Calls in flight"),
      view.calls.length ? h("div", { class: "scroll" }, h("table", { id: "actor-calls" },
        h("caption", { class: "sr-only" }, "Calls in flight to capped skills, each holding a slot"),
        h("thead", {}, h("tr", {}, ["Skill cap", "Call", "Run", "Since"].map((l) => h("th", { scope: "col" }, l)))),
        h("tbody", {}, view.calls.map((c) => h("tr", { dataset: { key: c.key } },
          h("td", {}, h("code", {}, c.key)),
          h("td", {}, c.action_id ? idCode(c.action_id) : none("a read in a turn")),
          h("td", {}, runLink(c.run_id)),
          h("td", {}, time(c.taken_at)))))))
        : h("p", { class: "muted" }, "No call of its runs is in flight to a capped skill."),
      view.waiting_for_capacity.length ? [h("h2", {}, "Waiting for a slot"),
        h("ul", { id: "actor-waiting", class: "inline" }, view.waiting_for_capacity.map((id) => h("li", {}, runLink(id))))]
        : null);
  };
}
