// legalsat's e-graph viewer: the kept e-graph of one optimize request, drawn with Cytoscape.js
// and laid out by dagre's layered algorithm (e-classes are compound nodes holding their e-nodes).
// dagre's longest-path ranking lays out a rank-8 permute's 300 collapsed e-classes and 1,000
// edges in about 0.6 s in headless Chromium on 2 cores; ELK's layered algorithm took 1.9 s.
//
// The page's data is a JSON document in <script id="egraph-data" type="application/json">
// (legalsat.server.egraph_view.view_html); nothing is fetched. Every string from the request
// reaches the page through textContent or Cytoscape's canvas labels, never as HTML.

import cytoscape from "cytoscape";
import dagre from "cytoscape-dagre";

cytoscape.use(dagre);
const started = performance.now();

const data = JSON.parse(document.getElementById("egraph-data").textContent);
const classes = new Map(data.eclasses.map((c) => [c.id, c]));
const enodes = new Map(data.enodes.map((n) => [n.id, n]));
// the e-classes drawn: first the plans' neighbourhood (`first`), all of `shown` on request
const shownSet = new Set(data.shown);
const drawn = new Set(data.first);

// Candidates: the plans (the chosen one first) and the rejected strategies located in the e-graph.
const candidates = [
  ...data.extracted.map((p, i) => ({ anchor: `plan-${i}`, kind: i === 0 ? "chosen" : "plan", ...p })),
  ...data.rejected.map((r, i) => ({ anchor: `rejected-${i}`, kind: "rejected", ...r })),
];
const roleOf = new Map(); // e-node id -> chosen | plan | rejected (the first one wins)
for (const c of candidates) for (const n of c.enodes) if (!roleOf.has(n)) roleOf.set(n, c.kind);
const chosen = candidates.find((c) => c.kind === "chosen");
const chosenClasses = new Set(chosen ? chosen.eclasses : []);

// Past `collapse_above` e-nodes, e-classes start collapsed (one node each), except the chosen plan's.
const collapsed = new Set();
if (data.enode_count > data.collapse_above) {
  for (const id of data.shown) if (!chosenClasses.has(id)) collapsed.add(id);
}

const us = (ps) => (ps / 1e6).toFixed(ps >= 1e7 ? 1 : 3);
const literal = (cid) => cid.slice(cid.indexOf("-") + 1);

// Node sizes from the label's lines (monospace 10 px: 6 px a character, 12 px a line); cheaper
// than asking the canvas to measure every label.
const size = (label) => {
  const lines = label.split("\n");
  return { w: Math.max(...lines.map((l) => l.length)) * 6 + 14, h: lines.length * 12 + 10 };
};

function nodeLabel(n) {
  const args = n.children.map((k) => (classes.has(k) ? "·" : literal(k)));
  const head = [n.op, ...args].join(" ");
  return n.cost === null ? head : `${head}\n${us(n.cost)} µs`;
}

function classLabel(c) {
  const cost = c.analyses.cost_ps === undefined ? "" : `  ≥ ${us(c.analyses.cost_ps)} µs`;
  const size = collapsed.has(c.id) ? `\n${c.nodes.length} e-node${c.nodes.length === 1 ? "" : "s"} ▸` : "";
  return `${c.sort} ${c.id}${c.root ? "  root" : ""}${cost}${size}`;
}

function elements() {
  const els = [];
  for (const id of drawn) {
    const c = classes.get(id);
    const tags = ["eclass", collapsed.has(id) ? "collapsed" : "expanded"];
    if (chosenClasses.has(id)) tags.push("chosen");
    const label = classLabel(c);
    els.push({ group: "nodes", data: { id: `c:${id}`, label, eclass: id, ...size(label) }, classes: tags.join(" ") });
    if (collapsed.has(id)) continue;
    for (const nid of c.nodes) {
      const n = enodes.get(nid);
      const label = nodeLabel(n);
      els.push({ group: "nodes", data: { id: `n:${nid}`, parent: `c:${id}`, label, enode: nid, eclass: id, ...size(label) },
                 classes: ["enode", roleOf.get(nid) || ""].join(" ").trim() });
    }
  }
  const seen = new Set();
  for (const id of drawn) {
    for (const nid of classes.get(id).nodes) {
      const from = collapsed.has(id) ? `c:${id}` : `n:${nid}`;
      for (const k of enodes.get(nid).children) {
        // a child that is the e-node's own class (a cycle) is not an edge a layered layout can draw
        if (!drawn.has(k) || k === id) continue;
        const key = `${from}>${k}`;
        if (seen.has(key)) continue;
        seen.add(key);
        const hot = roleOf.get(nid) === "chosen" && chosenClasses.has(k);
        els.push({ group: "edges", data: { id: key, source: from, target: `c:${k}` }, classes: hot ? "chosen" : "" });
      }
    }
  }
  return els;
}

const style = [
  { selector: "node", style: { label: "data(label)", "font-family": "monospace", "font-size": 10, "text-wrap": "wrap",
                               "text-valign": "center", "text-halign": "center", shape: "round-rectangle",
                               width: "data(w)", height: "data(h)", "background-color": "#fff",
                               "border-width": 1, "border-color": "#888" } },
  { selector: "node.eclass.expanded", style: { "text-valign": "top", "text-halign": "center", "background-color": "#f6f6f6",
                                               padding: "10px",
                                               "border-color": "#aaa", "border-style": "dashed", "font-size": 9 } },
  { selector: "node.eclass.collapsed", style: { "background-color": "#eaf0fa", "border-color": "#6b8ec9" } },
  { selector: "node.eclass.chosen", style: { "border-color": "goldenrod", "border-width": 3, "border-style": "solid" } },
  { selector: "node.enode.chosen", style: { "background-color": "gold", "border-width": 3, "border-color": "#8a6d00" } },
  { selector: "node.enode.plan", style: { "background-color": "lightyellow", "border-width": 2, "border-color": "#b59a00" } },
  { selector: "node.enode.rejected", style: { "border-color": "firebrick", "border-width": 2 } },
  { selector: "node.match", style: { "overlay-color": "#1f77b4", "overlay-opacity": 0.25, "overlay-padding": 4 } },
  { selector: "node:selected", style: { "border-color": "#1f77b4", "border-width": 4 } },
  { selector: "edge", style: { width: 1, "line-color": "#999", "target-arrow-color": "#999", "target-arrow-shape": "triangle",
                               "arrow-scale": 0.6, "curve-style": "straight" } },
  { selector: "edge.chosen", style: { width: 2.5, "line-color": "goldenrod", "target-arrow-color": "goldenrod" } },
];

const layoutOptions = { name: "dagre", fit: true, padding: 20, animate: false, rankDir: "LR", ranker: "longest-path",
                        nodeSep: 14, rankSep: 28 };

// a large e-graph opens on the chosen plan (the whole graph is one "Draw all" away)
const opening = candidates.find((c) => c.anchor === (location.hash.slice(1) || (collapsed.size ? "plan-0" : "")));
if (opening) prepare(opening);
const initial = elements();
// the first layout runs before the first frame is drawn; large graphs pan as a texture
const cy = cytoscape({ container: document.getElementById("graph"), style, elements: initial,
                       layout: { name: "preset" }, minZoom: 0.02, maxZoom: 4,
                       textureOnViewport: initial.length > 600, hideEdgesOnViewport: initial.length > 600 });

function layout() {
  return new Promise((resolve) => {
    const run = cy.layout({ ...layoutOptions, stop: resolve });
    run.run();
  });
}

async function redraw() {
  cy.elements().remove();
  cy.add(elements());
  await layout();
}

// ---- side panel ----

const $ = (id) => document.getElementById(id);
const el = (tag, text, cls) => {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  if (cls) e.className = cls;
  return e;
};

function fmt(v) {
  if (v === true) return "yes";
  if (Array.isArray(v)) return v.map((x) => (Array.isArray(x) ? `(${x.join(" ")})` : String(x))).join(", ");
  return String(v);
}

function showDetails(title, rows) {
  const box = $("details");
  box.replaceChildren(el("h3", title));
  const t = el("table");
  for (const [k, v] of rows) {
    const tr = el("tr");
    tr.append(el("th", k), el("td", fmt(v)));
    t.append(tr);
  }
  box.append(t);
}

function classRows(c) {
  const rows = [["sort", c.sort], ["e-nodes", c.nodes.length]];
  for (const [k, v] of Object.entries(c.analyses).sort()) rows.push([k === "cost_ps" ? "cheapest (µs)" : k, k === "cost_ps" ? us(v) : v]);
  return rows;
}

cy.on("tap", "node", async (evt) => {
  const d = evt.target.data();
  if (d.enode) {
    const n = enodes.get(d.enode);
    const c = classes.get(n.eclass);
    const rows = [["e-class", `${c.sort} ${c.id}`], ["operator", n.op],
                  ["arguments", n.children.map((k) => (classes.has(k) ? `e-class ${k}` : literal(k))).join(", ") || "none"]];
    if (n.cost !== null) rows.push(["cost (µs)", us(n.cost)]);
    if (roleOf.has(n.id)) rows.push(["part of", roleOf.get(n.id)]);
    showDetails(`e-node ${n.id}`, [...rows, ...classRows(c).slice(1)]);
  } else {
    const c = classes.get(d.eclass);
    showDetails(`e-class ${c.id}`, classRows(c));
  }
});

cy.on("dbltap", "node.eclass", async (evt) => {
  const id = evt.target.data("eclass");
  if (collapsed.has(id)) collapsed.delete(id);
  else collapsed.add(id);
  await redraw();
  focus(cy.getElementById(`c:${id}`));
});

function focus(eles) {
  if (eles.empty()) return;
  cy.elements().unselect();
  eles.select();
  cy.fit(eles, 40);
  if (cy.zoom() > 1.5) {
    cy.zoom(1.5);
    cy.center(eles);
  }
}

// In a large e-graph a candidate's e-classes lie far apart in the layered layout; going to it
// draws just them and the e-classes of their arguments, so that it fits the screen readably
// ("Draw all" brings the rest back). Returns whether what is drawn changed.
function prepare(cand) {
  const before = `${[...drawn].join()}|${[...collapsed].join()}`;
  const own = cand.eclasses.filter((id) => shownSet.has(id));
  for (const id of own) collapsed.delete(id);
  if (collapsed.size) {
    drawn.clear();
    for (const id of own) {
      drawn.add(id);
      for (const nid of classes.get(id).nodes) {
        for (const k of enodes.get(nid).children) if (shownSet.has(k)) drawn.add(k);
      }
    }
  } else {
    for (const id of own) drawn.add(id);
  }
  return before !== `${[...drawn].join()}|${[...collapsed].join()}`;
}

async function goTo(anchor) {
  const cand = candidates.find((c) => c.anchor === anchor);
  if (!cand) return;
  if (prepare(cand)) {
    await redraw();
    drawAllButton();
  }
  show(cand);
}

function show(cand) {
  const nodes = cy.collection(cand.enodes.map((n) => cy.getElementById(`n:${n}`)).filter((e) => e.nonempty()));
  focus(nodes);
  for (const li of document.querySelectorAll("#candidates li")) li.classList.toggle("current", li.dataset.anchor === cand.anchor);
  showDetails(`${cand.kind === "rejected" ? "rejected" : "plan"}: ${cand.strategy}`,
              cand.kind === "rejected"
                ? cand.reasons.map((r) => [r.rule, `${r.message} (fix: ${r.fix})`])
                : [["estimated (µs)", cand.estimated_us], ["term", cand.term]]);
}

function candidateList() {
  const ul = $("candidates");
  for (const c of candidates) {
    const li = el("li");
    li.dataset.anchor = c.anchor;
    li.className = c.kind;
    const a = el("a", c.kind === "rejected" ? `${c.strategy} (rejected)` : `${c.strategy}: ${c.estimated_us} µs`);
    a.href = `#${c.anchor}`;
    li.append(a);
    if (c.kind === "chosen") li.append(el("span", " chosen", "tag"));
    if (!c.located) li.append(el("span", " not in the e-graph", "tag"));
    if (c.kind === "rejected") {
      const why = el("ul");
      for (const r of c.reasons) why.append(el("li", `${r.rule}: ${r.message}`));
      li.append(why);
    }
    ul.append(li);
  }
}

function search(text) {
  cy.nodes().removeClass("match");
  const q = text.trim().toLowerCase();
  $("search-result").textContent = "";
  if (!q) return;
  const hitsClasses = new Set();
  const hitsNodes = [];
  for (const id of data.shown) {
    const c = classes.get(id);
    if (c.id.toLowerCase() === q || c.sort.toLowerCase() === q) hitsClasses.add(c.id);
    for (const nid of c.nodes) {
      const n = enodes.get(nid);
      if (n.op.toLowerCase().includes(q) || nid.toLowerCase() === q) { hitsNodes.push(n); hitsClasses.add(c.id); }
    }
  }
  return { hitsClasses, hitsNodes };
}

async function runSearch() {
  const found = search($("search").value);
  if (!found) return;
  const { hitsClasses, hitsNodes } = found;
  const missing = [...hitsClasses].filter((id) => !drawn.has(id));
  if (missing.length) {
    for (const id of missing) drawn.add(id);
    await redraw();
    drawAllButton();
  }
  // matched e-nodes inside collapsed classes: show the class itself
  const matched = cy.collection();
  for (const id of hitsClasses) {
    const inside = hitsNodes.filter((n) => n.eclass === id);
    const eles = collapsed.has(id) || inside.length === 0 ? cy.getElementById(`c:${id}`)
                                                            : cy.collection(inside.map((n) => cy.getElementById(`n:${n.id}`)));
    matched.merge(eles);
  }
  matched.addClass("match");
  $("search-result").textContent = `${hitsNodes.length} e-node(s) in ${hitsClasses.size} e-class(es)`;
  focus(matched);
}

function report() {
  const steps = (data.report && data.report.steps) || [];
  const byIter = new Map();
  for (const s of steps) {
    const row = byIter.get(s.iteration) || { matches: 0, added: 0, ms: 0, rulesets: [] };
    row.matches += s.matches;
    row.added += s.nodes_added;
    row.ms += s.time_ms;
    if (s.matches) row.rulesets.push(`${s.ruleset} ${s.matches}`);
    byIter.set(s.iteration, row);
  }
  const t = $("report");
  for (const [it, r] of byIter) {
    const tr = el("tr");
    tr.append(el("td", it === 0 ? "extract" : String(it)), el("td", String(r.matches)), el("td", String(r.added)),
              el("td", r.ms.toFixed(2)), el("td", r.rulesets.join(", ")));
    t.append(tr);
  }
}

$("go-plan").addEventListener("click", () => {
  if (location.hash === "#plan-0") goTo("plan-0");
  else location.hash = "plan-0";
});
function drawAllButton() {
  const b = $("draw-all");
  const rest = data.shown.length - drawn.size;
  b.hidden = rest <= 0;
  b.textContent = `Draw all ${data.shown.length} e-classes (${rest} more)`;
}

$("draw-all").addEventListener("click", async () => {
  for (const id of data.shown) drawn.add(id);
  drawAllButton();
  await redraw();
});
$("fit").addEventListener("click", () => cy.fit(undefined, 20));
$("expand-all").addEventListener("click", async () => { collapsed.clear(); await redraw(); });
$("collapse-all").addEventListener("click", async () => { for (const id of data.shown) collapsed.add(id); await redraw(); });
$("search-form").addEventListener("submit", (e) => { e.preventDefault(); runSearch(); });
window.addEventListener("hashchange", () => goTo(location.hash.slice(1)));

candidateList();
report();
drawAllButton();
layout().then(() => {
  if (opening) show(opening);
  document.body.dataset.ready = "1";
  // for scripted checks (the browser test): the graph, its state, and the actions above
  window.legalsatViewer = { cy, collapsed, goTo, runSearch, readyMs: performance.now() - started };
});
