"use strict";
// Shared by every console page: the bearer token, calls to the bridge's JSON API, who the caller is.
// The token is typed once and kept in sessionStorage (this tab only, gone when it closes); it is sent
// as `Authorization: Bearer` and never put in a URL.

const TOKEN_KEY = "tribrid.console.token";

class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

const Console = {
  legs: JSON.parse(document.body.dataset.legs),
  techniques: JSON.parse(document.body.dataset.techniques),

  token() {
    return sessionStorage.getItem(TOKEN_KEY) || "";
  },

  headers(extra) {
    const headers = { "content-type": "application/json", ...(extra || {}) };
    const token = this.token();
    if (token) headers.authorization = `Bearer ${token}`;
    return headers;
  },

  async fail(reply) {
    let body = {};
    try {
      body = await reply.json();
    } catch (_) {
      // not the bridge's JSON error body (a proxy's page): the status says enough
    }
    return new ApiError(reply.status, body.code || String(reply.status), body.message || reply.statusText);
  },

  // One API call: the answer's JSON, or an ApiError with the bridge's code and message.
  async api(method, path, body) {
    const init = { method, headers: this.headers() };
    if (body !== undefined) init.body = JSON.stringify(body);
    const reply = await fetch(path, init);
    if (!reply.ok) throw await this.fail(reply);
    return reply.json();
  },

  // A server-streaming route as NDJSON: onEvent(message) for each line; an {"error": ...} line
  // (the stream failed after it started) is thrown as an ApiError.
  async stream(path, body, onEvent) {
    const sep = path.includes("?") ? "&" : "?";
    const reply = await fetch(`${path}${sep}stream=true`, {
      method: "POST",
      headers: this.headers({ accept: "application/x-ndjson" }),
      body: JSON.stringify(body),
    });
    if (!reply.ok) throw await this.fail(reply);
    const reader = reply.body.getReader();
    const decoder = new TextDecoder();
    let buffered = "";
    const handle = (line) => {
      if (!line.trim()) return;
      const event = JSON.parse(line);
      if (event.error) throw new ApiError(500, event.error.code, event.error.message);
      onEvent(event);
    };
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffered += decoder.decode(value, { stream: true });
      const lines = buffered.split("\n");
      buffered = lines.pop();
      lines.forEach(handle);
    }
    handle(buffered + decoder.decode());
  },

  // An element: el("td", {class: "x", onclick: f}, "text", child, ...).
  el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else if (key === "dataset") Object.assign(node.dataset, value);
      else node.setAttribute(key, value === true ? "" : value);
    }
    for (const child of children.flat()) {
      if (child === undefined || child === null || child === false) continue;
      node.append(child instanceof Node ? child : String(child));
    }
    return node;
  },

  showError(id, err) {
    const node = document.getElementById(id);
    if (!err) {
      node.hidden = true;
      return;
    }
    node.hidden = false;
    node.textContent = err instanceof ApiError ? `${err.code}: ${err.message}` : String(err);
  },

  has(scope) {
    return !!this.who && this.who.scopes.includes(scope);
  },

  // The corpora the token may see, into a <datalist>; their ids.
  async fillCorpora(listId) {
    const { corpora } = await this.api("GET", "/v1/corpora");
    const list = document.getElementById(listId);
    list.replaceChildren(...corpora.map((c) => this.el("option", { value: c.corpusId })));
    return corpora.map((c) => c.corpusId);
  },

  // Symbolic enum names without their prefix: "FUSION_METHOD_RRF" -> "rrf".
  short(name, prefix) {
    return (name || "").replace(prefix, "").toLowerCase();
  },

  who: null,
};

// Who the token belongs to and its scopes (null without a usable token); pages await it.
Console.ready = (async () => {
  const who = document.getElementById("who");
  try {
    Console.who = await Console.api("GET", "/console/api/whoami");
    who.textContent = Console.who.auth
      ? `${Console.who.name} (${Console.who.scopes.join(", ")})`
      : "auth off";
  } catch (err) {
    who.textContent = err.status === 401 ? "enter a token" : `${err.code}: ${err.message}`;
    who.classList.add("error");
  }
  document.body.dataset.scopes = Console.who ? Console.who.scopes.join(" ") : "";
  return Console.who;
})();

document.getElementById("token-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const input = document.getElementById("token");
  if (input.value) sessionStorage.setItem(TOKEN_KEY, input.value.trim());
  input.value = "";
  location.reload();
});
document.getElementById("token-clear").addEventListener("click", () => {
  sessionStorage.removeItem(TOKEN_KEY);
  location.reload();
});
