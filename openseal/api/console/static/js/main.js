// The console's entry point: sign-in, the caller's permissions, and hash routes to pages.
import * as api from "./api.js";
import { h, replace, notice } from "./dom.js";
import * as runs from "./runs.js";
import * as run from "./run.js";
import * as approvals from "./approvals.js";
import * as proposals from "./proposals.js";
import * as actions from "./actions.js";
import * as objectives from "./objectives.js";
import * as triggers from "./triggers.js";
import * as requests from "./requests.js";
import * as deployments from "./deployments.js";
import * as ask from "./ask.js";
import * as actors from "./actors.js";

const ROUTES = [
  [/^#\/runs$/, runs.list],
  [/^#\/runs\/([^/]+)$/, run.page],
  [/^#\/approvals$/, approvals.inbox],
  [/^#\/approvals\/([^/]+)$/, approvals.page],
  [/^#\/proposals$/, proposals.list],
  [/^#\/proposals\/([^/]+)$/, proposals.page],
  [/^#\/actions$/, actions.list],
  [/^#\/objectives$/, objectives.list],
  [/^#\/objectives\/([^/]+)$/, objectives.page],
  [/^#\/triggers$/, triggers.list],
  [/^#\/triggers\/([^/]+)$/, triggers.page],
  [/^#\/requests$/, requests.list],
  [/^#\/requests\/([^/]+)$/, requests.page],
  [/^#\/deployments$/, deployments.list],
  [/^#\/deployments\/([^/]+)$/, deployments.page],
  [/^#\/ask$/, ask.page],
  [/^#\/agents\/([^/]+)$/, actors.page("agent")],
  [/^#\/teams\/([^/]+)$/, actors.page("team")],
];

const main = document.getElementById("main");
const who = document.getElementById("who");
let me = null;
let cleanup = null;

/** What the signed-in caller may do: me.may("runs.pause"). */
function permissions(body) {
  return {
    ...body,
    may(operation) {
      const entry = body.operations[operation];
      return Boolean(entry && entry.allowed);
    },
    why(operation) {
      const entry = body.operations[operation];
      return entry ? entry.reason : "unknown operation";
    },
  };
}

async function identify() {
  try {
    me = permissions(await api.get("/me"));
    return true;
  } catch (error) {
    if (error.status === 401) return false;
    throw error;
  }
}

function showSignIn(message) {
  replace(who);
  const input = h("input", { id: "token", name: "token", type: "password", autocomplete: "off",
    required: true, "aria-describedby": "token-help" });
  const form = h("form", { class: "card signin", "aria-labelledby": "signin-title" },
    h("h1", { id: "signin-title" }, "Sign in"),
    message ? notice("error", message) : null,
    h("label", { for: "token" }, "API token"),
    input,
    h("p", { id: "token-help", class: "muted" },
      "The bearer token the server's token file maps to you. It is kept in this page's memory only. "
      + "At the machine running the server, open the URL `openseal serve --local-operator` printed instead."),
    h("button", { type: "submit" }, "Sign in"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    api.signIn(input.value.trim());
    input.value = "";
    if (await identify()) { route(); return; }
    api.signOut();
    showSignIn("That token was not accepted.");
  });
  replace(main, form);
  input.focus();
}

function showWho() {
  const out = h("button", { type: "button", class: "link" }, "Sign out");
  out.addEventListener("click", () => { api.signOut(); me = null; showSignIn(null); });
  replace(who, h("span", {}, "Signed in as ", h("strong", { id: "principal" }, me.principal)),
    me.via_token ? out : h("span", { class: "muted" }, " (local operator)"));
}

async function route() {
  if (cleanup) { cleanup(); cleanup = null; }
  if (!me) { if (!(await identify())) { showSignIn(null); return; } }
  showWho();
  const hash = location.hash || "#/runs";
  for (const link of document.querySelectorAll("#nav a")) {
    const current = hash.startsWith(link.getAttribute("href"));
    if (current) link.setAttribute("aria-current", "page"); else link.removeAttribute("aria-current");
  }
  for (const [pattern, render] of ROUTES) {
    const match = pattern.exec(hash);
    if (!match) continue;
    replace(main, h("p", { class: "muted" }, "Loading…"));
    try {
      cleanup = (await render(main, me, ...match.slice(1).map(decodeURIComponent))) || null;
    } catch (error) {
      if (error.status === 401) { me = null; api.signOut(); showSignIn("Your token is no longer accepted."); return; }
      replace(main, h("h1", {}, "Something went wrong"), notice("error", error.message));
    }
    main.focus({ preventScroll: true });
    return;
  }
  replace(main, h("h1", {}, "Not found"), h("p", {}, h("a", { href: "#/runs" }, "Back to runs")));
}

const LOCAL_OPERATOR = "#local-operator=";

/** The console URL `openseal serve --local-operator` printed: its secret, out of the address
 * bar and the history at once, exchanged for the session cookie. */
async function start() {
  if (location.hash.startsWith(LOCAL_OPERATOR)) {
    const secret = decodeURIComponent(location.hash.slice(LOCAL_OPERATOR.length));
    history.replaceState(null, "", `${location.pathname}#/runs`);
    me = null;
    try {
      await api.openLocalSession(secret);
    } catch (error) {
      showSignIn(`The local operator's link was not accepted: ${error.message}`);
      return;
    }
  }
  await route();
}

// the link may also be pasted into an open console: a hash change, not a new page
window.addEventListener("hashchange", start);
start();
