"use strict";
// Corpora: the list (ListCorpora) with the graph's counts (Stats); index a path with its progress
// streamed from IndexCorpus as NDJSON (needs `index`); delete after a confirmation (needs `admin`:
// without it there is no button, and the API answers 403 anyway).

const { el } = Console;
const $ = (id) => document.getElementById(id);

function cell(value) {
  return el("td", { class: "num" }, value ?? "–");
}

function confirmDelete(row, corpusId) {
  const actions = row.querySelector(".actions");
  actions.replaceChildren(
    el("span", {}, `delete ${corpusId}? `),
    el("button", { type: "button", class: "danger confirm-delete", onclick: () => remove(corpusId, actions) }, "Yes, delete"),
    el("button", { type: "button", class: "link", onclick: () => load() }, "cancel"));
}

async function remove(corpusId, actions) {
  try {
    const answer = await Console.api("DELETE", `/v1/corpora/${encodeURIComponent(corpusId)}`);
    actions.replaceChildren(`deleted (${answer.chunksDeleted} chunks)`);
    await load();
  } catch (err) {
    Console.showError("corpora-error", err);
  }
}

async function load() {
  const { corpora } = await Console.api("GET", "/v1/corpora");
  // the graph's counts, one Stats call per corpus, together
  const stats = await Promise.all(corpora.map((c) =>
    Console.api("GET", `/v1/graph/${encodeURIComponent(c.corpusId)}/stats`).catch(() => null)));
  const rows = corpora.map((c, i) => {
    const s = stats[i];
    const row = el("tr", { dataset: { corpusId: c.corpusId } },
      el("td", {}, el("a", { href: `/console/search#${new URLSearchParams({ corpus: c.corpusId })}` }, c.corpusId)),
      el("td", { class: "muted path" }, c.rootPath),
      cell(c.files), cell(c.chunks), cell(s && s.entities), cell(s && s.relationships), cell(s && s.communities),
      cell(c.generation), el("td", {}, c.updatedAt ? new Date(c.updatedAt).toLocaleString() : "–"),
      el("td", { class: "actions" }));
    if (Console.has("admin")) {
      row.querySelector(".actions").append(
        el("button", { type: "button", class: "danger delete", onclick: () => confirmDelete(row, c.corpusId) }, "Delete"));
    }
    return row;
  });
  $("corpora").tBodies[0].replaceChildren(...rows);
}

function showProgress(event) {
  const total = event.chunksToEmbed || 0;
  $("index-bar").max = total || 1;
  $("index-bar").value = event.done ? $("index-bar").max : event.chunksEmbedded || 0;
  $("index-phase").textContent = event.done ? "done" : event.phase;
  $("index-phase").dataset.phase = event.done ? "done" : event.phase;
  const stages = Object.entries(event.stageSeconds || {}).map(([stage, s]) => `${stage} ${Number(s).toFixed(1)} s`).join(", ");
  const counts = [
    ["files", `${event.filesSeen} seen, ${event.filesChanged} changed, ${event.filesSkipped} skipped`],
    ["chunks", `${event.chunksTotal} (${event.chunksEmbedded} of ${total} embedded)`],
    ["graph", `${event.entities} entities, ${event.relationships} relations, ${event.communities} communities`],
    ["stages", stages || "–"],
    ["elapsed", `${Number(event.elapsedS).toFixed(1)} s${event.generation && event.generation !== "0" ? `, generation ${event.generation}` : ""}`],
  ];
  if (event.message) counts.push(["message", event.message]);
  $("index-counts").replaceChildren(...counts.flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
}

$("index-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  Console.showError("corpora-error", null);
  $("index-button").disabled = true;
  $("index-progress").hidden = false;
  $("index-phase").textContent = "starting";
  $("index-phase").dataset.phase = "starting";
  try {
    await Console.stream("/v1/index", { corpusId: $("index-corpus").value.trim(), path: $("index-path").value.trim() }, showProgress);
    await load();
  } catch (err) {
    $("index-phase").dataset.phase = "error";
    Console.showError("corpora-error", err);
  } finally {
    $("index-button").disabled = false;
  }
});

Console.ready.then(async (who) => {
  if (!who) return;
  $("index-form").hidden = !Console.has("index");
  try {
    await load();
  } catch (err) {
    Console.showError("corpora-error", err);
  }
});
