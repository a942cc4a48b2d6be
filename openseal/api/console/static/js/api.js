// Talking to the API. The bearer token lives in this module's memory only: never in
// storage, a cookie the page can read, or a URL. Reloading the page asks for it again.
// The local operator's secret (the URL `openseal serve --local-operator` prints) is exchanged
// once for an HttpOnly, SameSite=Strict cookie that this page cannot read either.

let token = null;

export class ApiError extends Error {
  constructor(status, body) {
    const error = (body && body.error) || {};
    super(error.message || `HTTP ${status}`);
    this.status = status;
    this.code = error.code || "http_error";
    this.details = error.details || {};
  }
}

export function signIn(value) { token = value || null; }
export function signOut() { token = null; }
export function signedIn() { return token !== null; }

function headers(extra) {
  const all = { Accept: "application/json", ...extra };
  if (token) all.Authorization = `Bearer ${token}`;
  return all;
}

export async function get(path, params) {
  const query = params ? `?${new URLSearchParams(Object.entries(params).filter(([, v]) => v))}` : "";
  const response = await fetch(`/api/v1${path}${query}`, { headers: headers(), credentials: "same-origin" });
  return parse(response);
}

export async function post(path, body) {
  const response = await fetch(`/api/v1${path}`, {
    method: "POST",
    headers: headers({ "Content-Type": "application/json" }),
    body: JSON.stringify(body || {}),
    credentials: "same-origin",
  });
  return parse(response);
}

/** Exchange the local operator's secret for the session cookie (the server checks it). */
export async function openLocalSession(secret) {
  const response = await fetch("/console/session", {
    method: "POST",
    headers: { Accept: "application/json", "Content-Type": "application/json" },
    body: JSON.stringify({ secret }),
    credentials: "same-origin",
  });
  if (!response.ok) await parse(response);
}

async function parse(response) {
  let body = null;
  try { body = await response.json(); } catch { body = null; }
  if (!response.ok) throw new ApiError(response.status, body);
  return body;
}

/**
 * Follow a run's Server-Sent Events with fetch (EventSource cannot send the bearer token).
 * Calls onEvent(event) for each event and returns a function that stops following.
 */
export function follow(runId, after, onEvent, onEnd) {
  const controller = new AbortController();
  let last = after;
  let stopped = false;
  async function once() {
    const response = await fetch(`/api/v1/runs/${encodeURIComponent(runId)}/events/stream?after=${last}`, {
      headers: headers({ Accept: "text/event-stream" }), signal: controller.signal, credentials: "same-origin",
    });
    if (!response.ok || !response.body) throw new ApiError(response.status, null);
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return false;
      buffer += value;
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const frame = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const fields = { event: "message", data: "" };
        for (const line of frame.split("\n")) {
          if (line.startsWith(":")) continue;
          const colon = line.indexOf(":");
          const name = colon < 0 ? line : line.slice(0, colon);
          const text = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
          fields[name] = name === "data" && fields.data ? `${fields.data}\n${text}` : text;
        }
        if (fields.event === "end") { if (onEnd) onEnd(); return true; }
        if (!fields.data) continue;
        const event = JSON.parse(fields.data);
        last = Math.max(last, Number(event.seq) || last);
        onEvent(event);
      }
    }
  }
  (async () => {
    while (!stopped) {
      try { if (await once()) return; } catch (error) { if (stopped) return; }
      await new Promise((resolve) => setTimeout(resolve, 2000));
    }
  })();
  return () => { stopped = true; controller.abort(); };
}
