"use strict";
// The search playground: a SearchRequest from the form (and the URL's hash, which holds the whole
// request so that a view can be shared), the fused answer with each leg's rank and raw score, how
// the question was read, each leg's latency against its budget, and each leg's own top 10.

const { el } = Console;
const $ = (id) => document.getElementById(id);
const legEnum = (leg) => `LEG_${leg.toUpperCase()}`;
const OWN_LIST = 10;

function readForm() {
  const fusion = {};
  if ($("method").value) fusion.method = $("method").value;
  const legs = [];
  for (const leg of Console.legs) {
    const setting = { leg: legEnum(leg) };
    if (!$(`leg-${leg}`).checked) setting.enabled = false;
    if ($(`weight-${leg}`).value !== "") setting.weight = Number($(`weight-${leg}`).value);
    if (Object.keys(setting).length > 1) legs.push(setting);
  }
  if (legs.length) fusion.legs = legs;
  const techniques = [...document.querySelectorAll(".technique:checked")].map((t) => t.value);
  if (techniques.length) fusion.techniques = techniques;
  if ($("expansion").checked) {
    fusion.enableExpansion = true;
    if ($("expansion-hops").value) fusion.expansionMaxHops = Number($("expansion-hops").value);
  }
  if ($("mmr").checked) {
    fusion.enableMmr = true;
    if ($("mmr-lambda").value !== "") fusion.mmrLambda = Number($("mmr-lambda").value);
  }
  if ($("rerank").checked) fusion.enableRerank = true;
  if ($("hedging").checked) fusion.enableHedging = true;
  const request = { corpusId: $("corpus").value.trim(), query: $("query").value, topK: Number($("top-k").value) };
  if (Object.keys(fusion).length) request.options = { fusion };
  return request;
}

function fillForm(request) {
  const fusion = (request.options && request.options.fusion) || {};
  $("corpus").value = request.corpusId || "";
  $("query").value = request.query || "";
  $("top-k").value = request.topK || 10;
  $("method").value = fusion.method || "";
  for (const leg of Console.legs) {
    const setting = (fusion.legs || []).find((s) => s.leg === legEnum(leg)) || {};
    $(`leg-${leg}`).checked = setting.enabled !== false;
    $(`weight-${leg}`).value = setting.weight ?? "";
  }
  for (const box of document.querySelectorAll(".technique")) {
    box.checked = (fusion.techniques || []).includes(box.value);
  }
  $("expansion").checked = !!fusion.enableExpansion;
  $("expansion-hops").value = fusion.expansionMaxHops ?? "";
  $("mmr").checked = !!fusion.enableMmr;
  $("mmr-lambda").value = fusion.mmrLambda ?? "";
  $("rerank").checked = !!fusion.enableRerank;
  $("hedging").checked = !!fusion.enableHedging;
}

function requestFromHash() {
  const raw = new URLSearchParams(location.hash.slice(1)).get("request");
  if (!raw) return null;
  try {
    return JSON.parse(raw);
  } catch (_) {
    return null;
  }
}

// One leg's own list: the same request through the gateway with every other leg switched off. The
// answer's explain only ranks the fused matches, so a leg's top 10 is asked for separately; fusing
// one leg keeps its order, and each match's explain still carries the leg's own rank and raw score.
// Techniques, the stages after fusion (diversity, rerank, expansion), the score floors and the
// per-file cap are off: the leg's list for the question itself.
function ownListRequest(request, leg) {
  const fusion = { ...((request.options && request.options.fusion) || {}) };
  fusion.legs = Console.legs.map((l) => ({ leg: legEnum(l), enabled: l === leg }));
  fusion.techniques = [];
  fusion.enableExpansion = false;
  fusion.enableMmr = false;
  fusion.enableRerank = false;
  delete fusion.minScore;
  fusion.maxChunksPerFile = 0;
  delete fusion.expansionMaxHops;
  return { ...request, topK: OWN_LIST, options: { ...(request.options || {}), fusion } };
}

function legEntry(match, leg) {
  return (match.explain || []).find((e) => e.leg === legEnum(leg) && !e.source);
}

function where(m) {
  const lines = m.startLine ? `:${m.startLine}-${m.endLine}` : "";
  return `${m.filePath}${lines}`;
}

function what(m) {
  if (m.section || m.documentTitle) {
    const pages = m.pageStart ? ` p.${m.pageStart}${m.pageEnd > m.pageStart ? `-${m.pageEnd}` : ""}` : "";
    return (m.section || m.documentTitle) + pages;
  }
  return m.symbol || m.kind;
}

function renderReading(answer) {
  const weights = Console.legs
    .filter((leg) => leg in (answer.weights || {}))
    .map((leg) =>
      el("div", { class: "weight" }, el("span", {}, leg),
        el("span", { class: "bar" }, el("span", { style: `width:${(answer.weights[leg] * 100).toFixed(1)}%` })),
        el("span", {}, answer.weights[leg].toFixed(2))));
  const intent = Console.short(answer.queryIntent, "QUERY_INTENT_");
  $("reading").replaceChildren(
    el("h3", {}, "How the question was read"),
    el("p", { id: "reading-kind" }, "kind ", el("strong", {}, Console.short(answer.queryKind, "QUERY_KIND_")),
      intent && intent !== "unspecified" ? [", intent ", el("strong", {}, intent)] : "",
      ", fusion ", el("strong", {}, Console.short(answer.fusionMethod, "FUSION_METHOD_"))),
    ...weights,
    el("p", { class: "muted" }, answer.weightsReason || "the weights of this kind of question, as configured"));
}

function renderLatency(answer) {
  const rows = (answer.legs || []).map((r) => {
    const share = r.budgetMs ? Math.min(100, (100 * r.latencyMs) / r.budgetMs) : 0;
    const status = Console.short(r.status, "LEG_STATUS_");
    return el("div", { class: `latency ${status}`, dataset: { leg: Console.short(r.leg, "LEG_") } },
      el("span", {}, Console.short(r.leg, "LEG_")),
      el("span", { class: "bar", title: `${r.latencyMs.toFixed(1)} of ${r.budgetMs.toFixed(0)} ms` },
        el("span", { style: `width:${share.toFixed(1)}%` })),
      el("span", {}, `${r.latencyMs.toFixed(1)} / ${r.budgetMs.toFixed(0)} ms · ${status} · ${r.hits} hits${r.hedged ? " · hedged" : ""}`),
      r.error ? el("span", { class: "error" }, r.error) : "");
  });
  $("latency").replaceChildren(el("h3", {}, "Each leg's latency against its budget"), ...rows,
    el("p", { class: "muted" }, `gateway took ${answer.tookMs.toFixed(1)} ms${answer.partial ? " · partial answer" : ""}`));
}

function renderFused(request, answer) {
  const legs = Console.legs;
  $("fused").tHead.replaceChildren(el("tr", {}, el("th", {}, "#"), el("th", {}, "score"), el("th", {}, "location"),
    el("th", {}, "symbol / section"), ...legs.map((l) => el("th", {}, l)), el("th", {}, "technique lists, stages")));
  const rank = new Map(answer.matches.map((m, i) => [m.chunkId, i + 1]));
  const rows = answer.matches.map((m, i) => {
    const sources = (m.explain || []).filter((e) => e.source && e.leg !== "LEG_EXPANSION")
      .map((e) => `${Console.short(e.leg, "LEG_")}:${e.source} #${e.rank}`);
    const expanded = (m.explain || []).find((e) => e.leg === "LEG_EXPANSION");
    const reranked = (m.explain || []).find((e) => e.leg === "LEG_RERANK");
    if (reranked) sources.push(`rerank ${reranked.rawScore.toFixed(3)} (fused #${reranked.fusedRank})`);
    if (m.documentContext) sources.push(`document +${m.documentContext.toFixed(3)}`);
    return el("tr", { dataset: { chunkId: m.chunkId }, class: "clickable", onclick: () => openChunk(request, m) },
      el("td", {}, m.expanded ? `${i + 1}+` : i + 1),
      el("td", {}, m.score.toFixed(4)),
      el("td", {}, where(m)),
      el("td", {}, what(m)),
      ...legs.map((leg) => {
        const e = legEntry(m, leg);
        return el("td", { class: "leg-rank" }, e && e.rank ? `#${e.rank} (${e.rawScore.toFixed(3)})` : "–");
      }),
      el("td", {}, sources.join(" "),
        expanded ? `expanded from #${rank.get(expanded.source) || expanded.source}` : ""));
  });
  $("fused").tBodies[0].replaceChildren(...rows);
  $("fused-summary").textContent = `${answer.matches.length} matches`;
  const techniques = (answer.techniques || []).map((t) =>
    el("p", {}, el("strong", {}, t.technique), ` ${Console.short(t.status, "TECHNIQUE_STATUS_")}`,
      ` · ${t.hits} hits · ${t.latencyMs.toFixed(1)} of ${t.budgetMs.toFixed(0)} ms${t.cached ? " · cached" : ""}`,
      t.error ? el("span", { class: "error" }, ` ${t.error}`) : "",
      (t.generated || []).length ? el("q", {}, t.generated.join(" | ")) : ""));
  $("techniques-out").replaceChildren(...techniques);
}

function renderOwnLists(request, lists) {
  const columns = Console.legs.map((leg, i) => {
    const list = lists[i];
    const head = el("h3", {}, leg);
    if (list instanceof Error) {
      return el("div", { class: "leg-column", dataset: { leg } }, head, el("p", { class: "error" }, list.message));
    }
    const items = list.matches
      .map((m) => ({ m, e: legEntry(m, leg) }))
      .filter(({ e }) => e && e.rank)
      .sort((a, b) => a.e.rank - b.e.rank)
      .map(({ m, e }) =>
        el("div", { class: "leg-item clickable", dataset: { chunkId: m.chunkId }, title: where(m),
          onclick: () => openChunk(request, m) },
          el("span", { class: "rank" }, `#${e.rank}`), ` ${what(m) || where(m)} `,
          el("span", { class: "muted" }, e.rawScore.toFixed(3))));
    const report = (list.legs || []).find((r) => r.leg === legEnum(leg));
    const status = report ? Console.short(report.status, "LEG_STATUS_") : "";
    return el("div", { class: "leg-column", dataset: { leg } }, head,
      el("p", { class: "muted" }, `${status} · ${items.length} matches`), ...items);
  });
  $("leg-columns").replaceChildren(...columns);
  drawLines();
}

// A line between the same chunk in two columns; a dashed curve when the columns are not neighbours.
function drawLines() {
  const svg = $("leg-lines");
  const box = $("legs-view").getBoundingClientRect();
  svg.setAttribute("width", box.width);
  svg.setAttribute("height", box.height);
  const columns = [...document.querySelectorAll(".leg-column")];
  const spots = columns.map((col) => new Map([...col.querySelectorAll(".leg-item")].map((item) => {
    const r = item.getBoundingClientRect();
    return [item.dataset.chunkId, { left: r.left - box.left, right: r.right - box.left, y: r.top - box.top + r.height / 2 }];
  })));
  const paths = [];
  for (let i = 0; i < spots.length; i++) {
    for (let j = i + 1; j < spots.length; j++) {
      for (const [chunk, a] of spots[i]) {
        const b = spots[j].get(chunk);
        if (!b) continue;
        const far = j > i + 1;
        const d = far
          ? `M${a.right},${a.y} C${a.right + 60},${a.y - 40} ${b.left - 60},${b.y - 40} ${b.left},${b.y}`
          : `M${a.right},${a.y} C${a.right + 30},${a.y} ${b.left - 30},${b.y} ${b.left},${b.y}`;
        const path = document.createElementNS("http://www.w3.org/2000/svg", "path");
        path.setAttribute("d", d);
        path.setAttribute("class", far ? "link far" : "link");
        path.dataset.chunkId = chunk;
        paths.push(path);
      }
    }
  }
  svg.replaceChildren(...paths);
}

async function openChunk(request, match) {
  $("chunk-panel").hidden = false;
  $("chunk-title").textContent = `${where(match)} ${what(match) || ""}`;
  const first = match.startLine || 1;
  $("chunk-text").replaceChildren(...(match.content || "").split("\n").map((line, i) =>
    el("span", { class: "line" }, el("span", { class: "ln" }, first + i), line)));
  const graph = $("chunk-graph");
  graph.replaceChildren(el("p", { class: "muted" }, "graph neighbours…"));
  const corpusId = request.corpusId;
  try {
    const found = await Console.api("POST", "/v1/graph/chunk-entities", { corpusId, chunkId: match.chunkId });
    const parts = [];
    const graphLink = (e) => el("a", { href: `/console/graph#${new URLSearchParams({ corpus: corpusId, entity: e.qualifiedName || e.name })}` },
      e.qualifiedName || e.name);
    // code: who calls each definition in the chunk, and what it calls
    for (const entity of (found.defined || []).slice(0, 5)) {
      const ask = (direction) => Console.api("POST", "/v1/graph/neighbors",
        { corpusId, entity: { entityId: entity.entityId }, relationshipType: "calls", direction });
      const [callers, callees] = await Promise.all([ask("EDGE_DIRECTION_IN"), ask("EDGE_DIRECTION_OUT")]);
      parts.push(el("div", { class: "neighbours" }, el("h4", {}, `${entity.type} `, graphLink(entity)),
        el("p", {}, "callers: ", callers.entities.length ? callers.entities.map(graphLink).flatMap((a) => [a, " "]) : "none"),
        el("p", {}, "callees: ", callees.entities.length ? callees.entities.map(graphLink).flatMap((a) => [a, " "]) : "none")));
    }
    // documents: the named entities the chunk mentions
    if ((found.mentions || []).length) {
      parts.push(el("div", { class: "neighbours" }, el("h4", {}, "entities mentioned"),
        el("p", {}, found.mentions.flatMap((e) => [graphLink(e), ` ${e.type} ×${e.edge ? e.edge.count : 1}  `]))));
    }
    graph.replaceChildren(...(parts.length ? parts : [el("p", { class: "muted" }, "no entity in the graph for this chunk")]));
  } catch (err) {
    graph.replaceChildren(el("p", { class: "error" }, `${err.code}: ${err.message}`));
  }
}

let searchSeq = 0;

async function run(request) {
  const seq = ++searchSeq;
  Console.showError("search-error", null);
  $("search-out").dataset.state = "loading";
  performance.mark(`search-${seq}-start`);
  // the leg lists go out with the fused request, in parallel; the fused answer is drawn first
  const own = Console.legs.map((leg) =>
    Console.api("POST", "/v1/search", ownListRequest(request, leg)).catch((err) => err));
  let answer;
  try {
    answer = await Console.api("POST", "/v1/search", request);
  } catch (err) {
    Console.showError("search-error", err);
    $("search-out").dataset.state = "error";
    return;
  }
  if (seq !== searchSeq) return; // a newer search is under way
  $("search-out").hidden = false;
  renderReading(answer);
  renderLatency(answer);
  renderFused(request, answer);
  $("search-out").dataset.tookMs = answer.tookMs;
  performance.measure("search-fused", `search-${seq}-start`);
  const lists = await Promise.all(own);
  if (seq !== searchSeq) return;
  renderOwnLists(request, lists);
  $("search-out").dataset.state = "done";
}

$("search-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const request = readForm();
  // the whole request in the hash: a shared link shows the same view (no token in it)
  history.replaceState(null, "", `#${new URLSearchParams({ request: JSON.stringify(request) })}`);
  run(request);
});
$("chunk-close").addEventListener("click", () => { $("chunk-panel").hidden = true; });
window.addEventListener("resize", () => { if (!$("search-out").hidden) drawLines(); });

Console.ready.then(async (who) => {
  if (!who) return;
  const shared = requestFromHash();
  try {
    const corpora = await Console.fillCorpora("corpus-list");
    // "#corpus=x": the corpora page's link; else the first corpus the token sees
    const named = new URLSearchParams(location.hash.slice(1)).get("corpus");
    if (!shared) $("corpus").value = named || corpora[0] || "";
  } catch (err) {
    Console.showError("search-error", err);
  }
  if (shared) {
    fillForm(shared);
    run(shared);
  }
});
