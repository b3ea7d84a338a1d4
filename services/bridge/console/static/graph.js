"use strict";
// The graph explorer: an entity found by name or alias (EntitySearch, which names the nearest names
// on a near miss), its neighbourhood to a depth over the chosen relation types (Neighbors, hop by
// hop), a node expanded on a click, the path between two entities (PathBetween) and the chunks an
// entity is mentioned in (EntityChunks), drawn with cytoscape.js.

const { el } = Console;
const $ = (id) => document.getElementById(id);
// Layouts: cose reads best on small graphs; past this, rings by hop from the root (breadth-first,
// about linear) keep it responsive.
const COSE_MAX_NODES = 80;
const EDGE_LABELS_MAX = 150;
const MAX_FIT_ZOOM = 1.2;
// Neighbors calls in flight at once while a neighbourhood is walked.
const PARALLEL = 8;

const PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"];
const colour = (type) => PALETTE[[...(type || "")].reduce((h, c) => (h * 31 + c.charCodeAt(0)) >>> 0, 7) % PALETTE.length];

const cy = cytoscape({
  container: $("cy"),
  style: [
    { selector: "node", style: { "background-color": "data(colour)", label: "data(label)", "font-size": 10, width: 18, height: 18,
      "text-valign": "bottom", "text-margin-y": 2, color: "#222",
      // labels too small to read are not drawn: hundreds of nodes stay fast
      "min-zoomed-font-size": 7 } },
    { selector: "node.root", style: { width: 28, height: 28, "border-width": 3, "border-color": "#222" } },
    { selector: "node:selected", style: { "border-width": 3, "border-color": "#d62728" } },
    { selector: "edge", style: { width: 1.2, "line-color": "#aaa", "target-arrow-color": "#aaa", "target-arrow-shape": "triangle",
      "curve-style": "bezier", "arrow-scale": 0.7, "font-size": 8, color: "#666", "text-rotation": "autorotate", "min-zoomed-font-size": 7 } },
    { selector: "edge.labelled", style: { label: "data(label)" } },
    { selector: ".path", style: { "line-color": "#d62728", "target-arrow-color": "#d62728", width: 3 } },
  ],
});

const state = { corpus: "", root: null, expanded: new Set(), depth: new Map() };

function centre() {
  const box = cy.nodes().boundingBox();
  return { x: (box.x1 + box.x2) / 2, y: (box.y1 + box.y2) / 2 };
}

function label(entity) {
  return entity.name || entity.qualifiedName || entity.entityId;
}

function nodeData(entity) {
  return { id: entity.entityId, label: label(entity), colour: colour(entity.type), entity };
}

function edgeLabel(entity) {
  const edge = entity.edge || {};
  const value = edge.strength || edge.similarity || edge.count || edge.confidence;
  return value ? `${entity.relationshipType} ${Number(value).toFixed(2).replace(/\.00$/, "")}` : entity.relationshipType;
}

// The drawing, for this page and for measuring it: start over from a root, add the entities
// Neighbors answered for a node, lay the graph out.
const TribridGraph = {
  cy,
  reset(root) {
    cy.elements().remove();
    state.root = root;
    state.expanded.clear();
    state.depth = new Map([[root.entityId, 0]]);
    cy.add({ group: "nodes", data: nodeData(root), classes: "root" });
  },
  add(fromId, entities) {
    const depth = (state.depth.get(fromId) || 0) + 1;
    cy.batch(() => {
      for (const e of entities) {
        if (cy.getElementById(e.entityId).empty()) {
          cy.add({ group: "nodes", data: nodeData(e) });
          state.depth.set(e.entityId, depth);
        }
        const [source, target] = e.direction === "in" ? [e.entityId, fromId] : [fromId, e.entityId];
        const id = `${source}|${e.relationshipType}|${target}`;
        if (cy.getElementById(id).empty()) {
          cy.add({ group: "edges", data: { id, source, target, label: edgeLabel(e) } });
        }
      }
    });
  },
  layout() {
    const edges = cy.edges();
    edges.toggleClass("labelled", edges.length <= EDGE_LABELS_MAX);
    const small = cy.nodes().length <= COSE_MAX_NODES;
    const options = small
      ? { name: "cose", animate: false, randomize: true, nodeRepulsion: () => 6000, idealEdgeLength: () => 70 }
      : { name: "breadthfirst", animate: false, circle: true, roots: cy.nodes(".root"), spacingFactor: 1.5 };
    cy.layout(options).run();
    cy.fit(undefined, 20);
    // a handful of nodes fitted to the view would be drawn huge
    if (cy.zoom() > MAX_FIT_ZOOM) cy.zoom({ level: MAX_FIT_ZOOM, position: centre() });
  },
};
window.TribridGraph = TribridGraph;

function relationTypes() {
  const checked = [...document.querySelectorAll(".relation-type:checked")].map((b) => b.value);
  return checked.length ? checked : [""];
}

async function neighbours(entityId) {
  const answers = await Promise.all(relationTypes().map((relationshipType) =>
    Console.api("POST", "/v1/graph/neighbors", { corpusId: state.corpus, entity: { entityId }, relationshipType })));
  return answers.flatMap((a) => a.entities).filter((e) => e.entityId !== entityId);
}

async function expand(entityId) {
  if (state.expanded.has(entityId)) return;
  state.expanded.add(entityId);
  TribridGraph.add(entityId, await neighbours(entityId));
}

function status(text) {
  $("graph-status").textContent = text;
}

async function drawNeighbourhood() {
  state.corpus = $("corpus").value.trim();
  const depth = Math.max(1, Math.min(3, Number($("depth").value) || 1));
  history.replaceState(null, "", `#${new URLSearchParams({ corpus: state.corpus, entity: $("entity").value, depth })}`);
  // EntitySearch resolves the name (or alias) and names the nearest ones on a near miss
  const found = await Console.api("POST", "/v1/graph/entity",
    { corpusId: state.corpus, entity: { name: $("entity").value.trim() }, maxHops: 1, limit: 1 });
  TribridGraph.reset(found.entity);
  let frontier = [found.entity.entityId];
  for (let hop = 1; hop <= depth && frontier.length; hop++) {
    const before = new Set(cy.nodes().map((n) => n.id()));
    for (let i = 0; i < frontier.length; i += PARALLEL) {
      await Promise.all(frontier.slice(i, i + PARALLEL).map(expand));
    }
    frontier = cy.nodes().map((n) => n.id()).filter((id) => !before.has(id));
  }
  TribridGraph.layout();
  status(`${cy.nodes().length} entities, ${cy.edges().length} relations within ${depth} hop${depth > 1 ? "s" : ""} of ${label(found.entity)}`);
  select(cy.getElementById(found.entity.entityId));
}

async function drawPath() {
  state.corpus = $("corpus").value.trim();
  const path = await Console.api("POST", "/v1/graph/path", {
    corpusId: state.corpus, source: { name: $("entity").value.trim() }, target: { name: $("target").value.trim() } });
  if (!path.found) {
    status(`no path between ${$("entity").value} and ${$("target").value} within the graph's hop limit`);
    return;
  }
  const [first, ...rest] = path.entities;
  TribridGraph.reset(first);
  rest.forEach((entity, i) => {
    const from = path.entities[i];
    TribridGraph.add(from.entityId, [{ ...entity, relationshipType: path.relationshipTypes[i], direction: "out", edge: path.edges[i] }]);
  });
  cy.elements().addClass("path");
  TribridGraph.layout();
  status(`path of ${path.relationshipTypes.length} step${path.relationshipTypes.length === 1 ? "" : "s"}: ` +
    path.entities.map(label).join(" → "));
}

async function select(node) {
  if (node.empty()) return;
  cy.elements().unselect();
  node.select();
  const entity = node.data("entity");
  $("entity-panel").hidden = false;
  $("entity-title").textContent = entity.qualifiedName || entity.name;
  const where = entity.filePath ? ` · ${entity.filePath}${entity.startLine ? `:${entity.startLine}-${entity.endLine}` : ""}` : "";
  const aliases = (entity.aliases || []).length ? ` · also ${entity.aliases.join(", ")}` : "";
  $("entity-desc").textContent = `${entity.type}${where}${aliases}`;
  $("expand-button").onclick = () => expandAndDraw(node);
  const list = $("entity-chunks");
  list.replaceChildren(el("li", { class: "muted" }, "…"));
  try {
    const chunks = await Console.api("POST", "/v1/graph/chunks", { corpusId: state.corpus, entity: { entityId: entity.entityId }, limit: 50 });
    list.replaceChildren(...chunks.matches.map((m) => el("li", { dataset: { chunkId: m.chunkId } },
      `${m.filePath}${m.startLine ? `:${m.startLine}-${m.endLine}` : ""} `,
      el("span", { class: "muted" }, m.section || m.symbol || "", ` (${m.score})`))));
    if (!chunks.matches.length) list.replaceChildren(el("li", { class: "muted" }, "no chunk"));
  } catch (err) {
    list.replaceChildren(el("li", { class: "error" }, `${err.code}: ${err.message}`));
  }
}

async function expandAndDraw(node) {
  const before = cy.nodes().length;
  try {
    await expand(node.id());
  } catch (err) {
    Console.showError("graph-error", err);
    return;
  }
  TribridGraph.layout();
  status(`${node.data("label")}: ${cy.nodes().length - before} new entities; ${cy.nodes().length} in all`);
}

// A click on a node shows it and expands it.
cy.on("tap", "node", (event) => {
  select(event.target);
  expandAndDraw(event.target);
});

async function loadRelationTypes() {
  const corpus = $("corpus").value.trim();
  if (!corpus) return;
  const box = $("relation-types");
  try {
    const stats = await Console.api("GET", `/v1/graph/${encodeURIComponent(corpus)}/stats`);
    box.replaceChildren(box.firstElementChild, ...Object.entries(stats.relationshipsByType).sort().map(([type, n]) =>
      el("label", {}, el("input", { type: "checkbox", class: "relation-type", value: type }), ` ${type} `, el("span", { class: "muted" }, n))));
  } catch (err) {
    Console.showError("graph-error", err);
  }
}

function guarded(action) {
  return async (event) => {
    event.preventDefault();
    Console.showError("graph-error", null);
    status("…");
    try {
      await action();
    } catch (err) {
      status("");
      Console.showError("graph-error", err);
    }
  };
}

$("graph-form").addEventListener("submit", guarded(drawNeighbourhood));
$("path-button").addEventListener("click", guarded(drawPath));
$("corpus").addEventListener("change", loadRelationTypes);

Console.ready.then(async (who) => {
  if (!who) return;
  const shared = new URLSearchParams(location.hash.slice(1));
  try {
    const corpora = await Console.fillCorpora("corpus-list");
    $("corpus").value = shared.get("corpus") || corpora[0] || "";
  } catch (err) {
    Console.showError("graph-error", err);
  }
  await loadRelationTypes();
  if (shared.get("entity")) {
    $("entity").value = shared.get("entity");
    $("depth").value = shared.get("depth") || 1;
    guarded(drawNeighbourhood)(new Event("submit"));
  }
});
