// Actions needing attention: outcomes that are open (unknown) or need a person, with
// reconcile (ask the destination again) and resolve (settle by hand with evidence).
import * as api from "./api.js";
import { h, replace, badge, time, notice, jsonView } from "./dom.js";

export async function list(main, me) {
  const message = h("div", { id: "actions-message" });
  const found = [
    ...(await api.get("/actions", { status: "unknown" })).actions,
    ...(await api.get("/actions", { status: "needs_attention" })).actions,
  ];
  const reconcile = (action) => h("button", { type: "button", dataset: { op: "reconcile" }, onclick: async () => {
    try {
      const done = await api.post(`/actions/${encodeURIComponent(action.id)}/reconcile`, {});
      await list(main, me);
      document.getElementById("actions-message").append(notice("ok",
        `${action.key}: ${done.action.status}${done.pending ? ` — ${done.pending}` : ""}`));
    } catch (error) { replace(message, notice("error", `Refused (${error.code}): ${error.message}`)); }
  } }, "Reconcile");
  const resolve = (action) => {
    const id = `resolve-${action.id}`;
    const outcome = h("select", { id: `${id}-outcome` }, h("option", { value: "succeeded" }, "succeeded"), h("option", { value: "failed" }, "failed"));
    const evidence = h("input", { id: `${id}-evidence`, type: "text", required: true, maxlength: 4000 });
    const form = h("form", { class: "row", "aria-label": `Resolve ${action.key}` },
      h("label", { for: `${id}-outcome` }, "Outcome"), outcome,
      h("label", { for: `${id}-evidence` }, "Evidence you checked"), evidence,
      h("button", { type: "submit" }, "Resolve"));
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      try {
        await api.post(`/actions/${encodeURIComponent(action.id)}/resolve`, { outcome: outcome.value, evidence: evidence.value });
        await list(main, me);
      } catch (error) { replace(message, notice("error", `Refused (${error.code}): ${error.message}`)); }
    });
    return form;
  };
  replace(main, h("h1", {}, "Actions needing attention"),
    h("p", {}, h("strong", {}, "Reconcile"), " asks the destination what happened, through the skill's lookup or a retry with the same action key; nothing new is sent. ",
      h("strong", {}, "Resolve"), " settles the action by hand after you checked the destination yourself; the run then continues."),
    message,
    found.length ? h("ul", { id: "attention", class: "cards" }, found.map((action) => h("li", { class: "card", dataset: { action: action.id } },
      h("p", {}, h("code", {}, action.key), " ", badge(action.status), " ", action.skill, " — run ",
        h("a", { href: `#/runs/${encodeURIComponent(action.run_id)}` }, h("code", {}, action.run_id))),
      action.error ? h("p", {}, action.error) : null,
      h("p", { class: "muted" }, "Updated ", time(action.updated_at)),
      action.result !== null ? jsonView(action.result) : null,
      me.may("actions.reconcile") ? reconcile(action) : null,
      me.may("actions.resolve") ? resolve(action) : null)))
      : h("p", { class: "muted" }, "No action needs attention."));
}
