// Starting work from a prompt: the team's or agent's model picks the workflow and fills its
// inputs; the page shows both, and only "Start" creates the objective (POST /asks, then
// POST /asks/confirm — what `openseal ask` does).
import * as api from "./api.js";
import { h, replace, fields, jsonView, notice } from "./dom.js";

export async function page(main, me) {
  if (!me.may("asks.plan") || !me.may("asks.confirm")) {
    const why = me.may("asks.plan") ? me.why("asks.confirm") : me.why("asks.plan");
    replace(main, h("h1", {}, "Ask"), notice("info", `You cannot start work from a prompt here: ${why}`));
    return;
  }
  const owners = await askable();
  const prompt = h("textarea", { id: "ask-prompt", name: "prompt", rows: 3, maxlength: 8000, required: true });
  const owner = h("select", { id: "ask-owner", name: "owner", required: true },
    owners.map((value) => h("option", { value }, value)));
  const message = h("div", { id: "ask-message", "aria-live": "polite" });
  const planned = h("div", { id: "ask-plan" });
  const button = h("button", { type: "submit", class: "primary" }, "Ask");
  const form = h("form", { id: "ask", class: "card", "aria-labelledby": "ask-title" },
    h("h2", { id: "ask-title" }, "What should be done?"),
    h("label", { for: "ask-prompt" }, "Prompt"), prompt,
    h("label", { for: "ask-owner" }, "Ask"), owner,
    h("p", { class: "muted" }, "Its model picks one of the workflows it may start and fills the inputs. "
      + "Nothing starts until you confirm."),
    button, message);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    replace(planned);
    const body = { prompt: prompt.value.trim(), ...ownerOf(owner.value) };
    button.disabled = true;
    replace(message, h("p", { class: "muted" }, "Asking the model…"));
    try {
      const found = (await api.post("/asks", body)).plan;
      replace(message);
      replace(planned, plan(found, body, planned, message));
    } catch (error) {
      replace(message, notice("error", error.code === "no_fitting_workflow"
        ? `No workflow fits: ${error.message}` : `Refused (${error.code}): ${error.message}`));
    } finally {
      button.disabled = false;
    }
  });
  replace(main, h("h1", {}, "Ask"),
    owners.length ? [form, planned]
      : h("p", { class: "muted" }, "No team or agent is deployed: there is no one to ask."));
}

/** The teams and agents a prompt can go to: the owners of the deployed workflows, and the
 * agents whose delegated requests run as one (the server checks again what each may start). */
async function askable() {
  const workflows = (await api.get("/deployments")).deployments.filter((d) => d.kind === "workflow");
  const found = new Set();
  for (const d of workflows) {
    const { document } = await api.get(`/definitions/${encodeURIComponent(d.active_digest)}`);
    const owner = (document.spec || {}).owner;
    if (owner) found.add(owner);
    for (const name of Object.keys(document.dependencies || {})) {
      if (!name.startsWith("agent.")) continue;
      const agent = (await api.get(`/definitions/${encodeURIComponent(document.dependencies[name])}`)).document;
      if ((agent.spec || {}).workflow === d.name) found.add(name);
    }
  }
  return [...found].sort();
}

function ownerOf(value) {
  const [kind, ...rest] = value.split(".");
  return { [kind]: rest.join(".") };
}

/** The plan the model answered, and the two ways on: start it, or drop it. */
function plan(found, body, planned, message) {
  const start = h("button", { type: "button", class: "primary", dataset: { op: "confirm" } }, "Start");
  const drop = h("button", { type: "button", dataset: { op: "drop" } }, "Cancel");
  start.addEventListener("click", async () => {
    start.disabled = true;
    try {
      const made = await api.post("/asks/confirm", { ...body, workflow: found.workflow, inputs: found.inputs,
        project: found.project, scope: found.scope });
      location.hash = `#/objectives/${encodeURIComponent(made.objective.id)}`;
    } catch (error) {
      start.disabled = false;
      replace(message, notice("error", `Refused (${error.code}): ${error.message}`));
    }
  });
  drop.addEventListener("click", () => {
    replace(planned);
    replace(message, notice("info", "Nothing was started."));
  });
  return h("section", { class: "card", "aria-labelledby": "ask-plan-title" },
    h("h2", { id: "ask-plan-title" }, "The plan"),
    fields([
      ["Workflow", h("strong", { id: "ask-workflow" }, found.workflow)],
      ["Why", found.reason || h("span", { class: "muted" }, "—")],
      ["Inputs", h("div", { id: "ask-inputs" }, jsonView(found.inputs))],
      ["Goal", found.prompt],
      ["Asked", found.owner],
    ]),
    h("p", {}, start, " ", drop));
}
