"use strict";
// Health: the bridge (/readyz) and each gRPC service's health check, and each leg's p50/p99 as the
// gateway's own latency histogram has them (computed by the console route from its buckets).

const { el } = Console;
const $ = (id) => document.getElementById(id);
const POLL_MS = 5000;

const fmt = (ms) => (ms === null || ms === undefined ? "–" : ms.toFixed(1));

async function refresh() {
  const ready = await fetch("/readyz").then(async (r) => ({ ok: r.ok, body: await r.json() }));
  let health;
  try {
    health = await Console.api("GET", "/console/api/health");
    Console.showError("health-error", null);
  } catch (err) {
    Console.showError("health-error", err);
    return;
  }
  const bridge = { service: "bridge", address: location.host, status: ready.ok ? ready.body.status : `${ready.body.code}: ${ready.body.message}` };
  $("services").tBodies[0].replaceChildren(...[bridge, ...health.services].map((s) =>
    el("tr", { dataset: { service: s.service }, class: s.status === "SERVING" ? "ok" : "bad" },
      el("td", {}, s.service), el("td", { class: "muted" }, s.address), el("td", {}, s.status, s.error ? ` ${s.error}` : ""))));
  $("leg-latency").tBodies[0].replaceChildren(...health.legs.map((l) =>
    el("tr", { dataset: { leg: l.leg } }, el("td", {}, l.leg), el("td", { class: "num" }, l.calls),
      el("td", { class: "num" }, fmt(l.p50Ms)), el("td", { class: "num" }, fmt(l.p99Ms)))));
  $("window").textContent = health.windowS === null ? "(since the gateway started)" : `(last ${Math.round(health.windowS)} s)`;
  $("metrics-source").textContent = health.metricsError
    ? `metrics from ${health.metricsSource}: ${health.metricsError}`
    : `from tribrid_leg_duration_seconds (${health.metricsSource}); refreshed every ${POLL_MS / 1000} s`;
}

Console.ready.then(async (who) => {
  if (!who) return;
  await refresh();
  setInterval(refresh, POLL_MS);
});
