// Building the page from data without ever parsing data as HTML: every value becomes a text
// node or an attribute set through the DOM, so a vendor named "<script>" shows as those
// characters. No innerHTML anywhere in the console.

const SVG_NS = "http://www.w3.org/2000/svg";

function build(element, attrs, children) {
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") {
      element.addEventListener(key.slice(2).toLowerCase(), value);
    } else if (key === "dataset") {
      Object.assign(element.dataset, value);
    } else {
      element.setAttribute(key, value === true ? "" : String(value));
    }
  }
  append(element, children);
  return element;
}

export function append(element, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return element;
}

/** h("a", {href: "#/runs"}, "Runs") — an HTML element with text children. */
export function h(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children);
}

/** s("rect", {x: 1}) — an SVG element. */
export function s(tag, attrs, ...children) {
  return build(document.createElementNS(SVG_NS, tag), attrs, children);
}

export function replace(element, ...children) {
  element.replaceChildren();
  return append(element, children);
}

/** A time in the viewer's zone, with the UTC value on hover. */
export function time(iso) {
  if (!iso) return h("span", { class: "muted" }, "—");
  const when = new Date(iso);
  if (Number.isNaN(when.getTime())) return h("span", {}, String(iso));
  return h("time", { datetime: when.toISOString(), title: `${when.toISOString()} (UTC)` },
    when.toLocaleString());
}

/** How long ago, in words, with the exact time on hover. */
export function age(iso) {
  const when = new Date(iso);
  const seconds = Math.max(0, Math.round((Date.now() - when.getTime()) / 1000));
  const text = seconds < 60 ? `${seconds}s` : seconds < 3600 ? `${Math.floor(seconds / 60)}m`
    : seconds < 86400 ? `${Math.floor(seconds / 3600)}h` : `${Math.floor(seconds / 86400)}d`;
  return h("time", { datetime: when.toISOString(),
    title: `${when.toLocaleString()} — ${when.toISOString()} (UTC)` }, `${text} ago`);
}

export function badge(status) {
  return h("span", { class: `badge status-${String(status).replace(/[^a-z_]/g, "")}` }, status);
}

const CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz";

/** A record's handle: its id's last ten hex digits in eight characters of Crockford's base32,
 * what every command and route takes in its place (docs/decisions/0019-handles.md). */
export function handle(id) {
  let value = parseInt(String(id).slice(-10), 16);
  let text = "";
  for (let i = 0; i < 8; i += 1) {
    text = CROCKFORD[value % 32] + text;
    value = Math.floor(value / 32);
  }
  return text;
}

/** An id as lists show it: the handle, the whole id on hover. */
export function idCode(id) {
  return h("code", { class: "id handle", title: id }, handle(id));
}

export function short(digest) {
  const text = String(digest || "").replace(/^sha256:/, "");
  return h("code", { title: String(digest || "") }, text.slice(0, 12));
}

/** A <dl> of label → value pairs (values may be nodes or text). */
export function fields(pairs) {
  return h("dl", { class: "fields" },
    pairs.map(([label, value]) => [h("dt", {}, label), h("dd", {}, value)]));
}

/** Any JSON value as nested text: objects as field lists, scalars as code. */
export function jsonView(value) {
  // nothing is shown as a word a person reads, never as JSON's null, {} or []
  if (value === null || value === undefined) return h("span", { class: "muted" }, "—");
  if (Array.isArray(value)) {
    if (value.length === 0) return h("span", { class: "muted" }, "none");
    return h("ol", { class: "json" }, value.map((item) => h("li", {}, jsonView(item))));
  }
  if (typeof value === "object") {
    const keys = Object.keys(value).sort();
    if (keys.length === 0) return h("span", { class: "muted" }, "none");
    return fields(keys.map((key) => [key, jsonView(value[key])]));
  }
  return h("code", { class: `json-${typeof value}` }, typeof value === "string" ? value : JSON.stringify(value));
}

/** A visible message: role=alert for refusals, status for confirmations. */
export function notice(kind, text) {
  return h("p", { class: `notice notice-${kind}`, role: kind === "error" ? "alert" : "status" }, text);
}

/** "agent.finance" or "team.procurement" as a link to what that agent or team is doing now. */
export function actorLink(name) {
  const [kind, ...rest] = String(name || "").split(".");
  if ((kind !== "agent" && kind !== "team") || !rest.length) return name || h("span", { class: "muted" }, "—");
  return h("a", { href: `#/${kind}s/${encodeURIComponent(rest.join("."))}` }, name);
}
