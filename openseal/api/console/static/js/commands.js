// A button that posts one command and reloads its page, reporting a refusal with its code.
import * as api from "./api.js";
import { h, replace, notice } from "./dom.js";

/** command({label, path, body, message, then}) — ``body`` may be a function called at click
 * time (to read a form's fields); ``then`` runs after the API accepted the command. */
export function command({ label, path, body, message, then, op }) {
  return h("button", { type: "button", dataset: { op: op || label.toLowerCase() }, onclick: async (event) => {
    const button = event.currentTarget;
    button.disabled = true;
    try {
      await api.post(path, typeof body === "function" ? body() : body || {});
      await then();
    } catch (error) {
      button.disabled = false;
      // an error without a code was found here, before anything was sent
      replace(message, notice("error", !error.code ? error.message : error.code === "stale_revision"
        ? `Refused: it changed since this page loaded. Reload. (${error.message})`
        : `Refused (${error.code}): ${error.message}`));
    }
  } }, label);
}

/** A labelled text field: [label, input]. */
export function field(id, label, attrs) {
  const input = h("input", { id, name: id, type: "text", maxlength: 4000, ...attrs });
  return [h("label", { for: id }, label), input];
}
