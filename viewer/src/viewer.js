// legalsat's e-graph viewer: the kept e-graph of one optimize request, drawn with Cytoscape.js
// (e-classes are compound nodes holding their e-nodes) and laid out in two steps: dagre's layered
// algorithm places the e-classes, as boxes of their drawn size, then each open e-class stacks its
// e-nodes. dagre has no layout for edges into compound nodes (cytoscape-dagre leaves them out,
// and with every e-class open it failed outright), so it is never given one. dagre's
// longest-path ranking lays out a rank-8 permute's 300 collapsed e-classes and 1,000 edges in
// about 0.6 s in headless Chromium on 2 cores; ELK's layered algorithm took 1.9 s.
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
// the time a plan e-node carries is the e-graph's estimate, what extraction ranks by; the other
// sorts' cost entries are sizes, not times
const priced = (n) => n.cost !== null && classes.get(n.eclass).sort === "Plan";
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
  return priced(n) ? `${head}\n${us(n.cost)} µs` : head;
}

// an e-node's label (and so its box) never changes: made once, for the drawing and the layout
const enodeBoxes = new Map();
function enodeBox(nid) {
  let box = enodeBoxes.get(nid);
  if (!box) {
    const label = nodeLabel(enodes.get(nid));
    box = { label, ...size(label) };
    enodeBoxes.set(nid, box);
  }
  return box;
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
      els.push({ group: "nodes", data: { id: `n:${nid}`, parent: `c:${id}`, enode: nid, eclass: id, ...enodeBox(nid) },
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

// a large e-graph opens on the chosen plan (the whole graph is one "Draw all" away), as does an
// anchor that names no candidate
const opening = candidates.find((c) => c.anchor === location.hash.slice(1))
  || (collapsed.size ? candidates.find((c) => c.anchor === "plan-0") : undefined);
if (opening) prepare(opening);
const initial = elements();
// the first layout runs before the first frame is drawn; large graphs pan as a texture
const cy = cytoscape({ container: document.getElementById("graph"), style, elements: initial,
                       layout: { name: "preset" }, minZoom: 0.02, maxZoom: 4,
                       textureOnViewport: initial.length > 600, hideEdgesOnViewport: initial.length > 600 });

// an open e-class: its e-nodes stacked GAP apart inside PAD (the compound's own padding), its
// label above them
const PAD = 10, GAP = 8, HEAD = 14;

function classBox(id) {
  const c = classes.get(id);
  const own = size(classLabel(c));
  if (collapsed.has(id)) return own;
  const kids = c.nodes.map(enodeBox);
  return { w: Math.max(own.w, ...kids.map((k) => k.w)) + 2 * PAD,
           h: kids.reduce((sum, k) => sum + k.h, 0) + GAP * (kids.length - 1) + 2 * PAD + HEAD };
}

function place(boxes) {
  cy.batch(() => {
    boxes.nodes().forEach((b) => {
      const id = b.id(), p = b.position();
      if (collapsed.has(id)) {
        cy.getElementById(`c:${id}`).position(p);
        return;
      }
      let y = p.y - b.data("h") / 2 + PAD + HEAD;
      for (const nid of classes.get(id).nodes) {
        const { h } = enodeBox(nid);
        cy.getElementById(`n:${nid}`).position({ x: p.x, y: y + h / 2 });
        y += h + GAP;
      }
    });
  });
}

let busy = 0; // layouts under way (window.legalsatViewer.idle() for scripted checks)

function layout() {
  const els = [], seen = new Set();
  for (const id of drawn) els.push({ group: "nodes", data: { id, ...classBox(id) } });
  for (const id of drawn) {
    for (const nid of classes.get(id).nodes) {
      for (const k of enodes.get(nid).children) {
        if (!drawn.has(k) || k === id || seen.has(`${id}>${k}`)) continue;
        seen.add(`${id}>${k}`);
        els.push({ group: "edges", data: { id: `${id}>${k}`, source: id, target: k } });
      }
    }
  }
  const boxes = cytoscape({ headless: true, styleEnabled: true, elements: els,
                            style: [{ selector: "node", style: { width: "data(w)", height: "data(h)" } }] });
  busy += 1;
  return new Promise((resolve) => {
    const done = () => {
      place(boxes);
      boxes.destroy();
      cy.fit(undefined, layoutOptions.padding);
      busy -= 1;
      resolve();
    };
    try {
      boxes.layout({ ...layoutOptions, fit: false, stop: done }).run();
    } catch (err) { // a graph dagre cannot rank: a grid, said so
      console.warn(`dagre failed (${err}); the e-classes are drawn on a grid`);
      boxes.layout({ name: "grid", fit: false, avoidOverlap: true, stop: done }).run();
    }
  });
}

async function redraw() {
  cy.elements().remove();
  cy.add(elements());
  // a redraw drops the search's highlights: its count would describe nothing on screen
  const said = document.getElementById("search-result");
  if (said) said.textContent = "";
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
  for (const [k, v] of Object.entries(c.analyses).sort()) {
    if (k !== "cost_ps") rows.push([k, v]);
    else if (c.sort === "Plan") rows.push(["cheapest e-graph estimate (µs)", us(v)]);
  }
  return rows;
}

cy.on("tap", "node", async (evt) => {
  const d = evt.target.data();
  if (d.enode) {
    const n = enodes.get(d.enode);
    const c = classes.get(n.eclass);
    const rows = [["e-class", `${c.sort} ${c.id}`], ["operator", n.op],
                  ["arguments", n.children.map((k) => (classes.has(k) ? `e-class ${k}` : literal(k))).join(", ") || "none"]];
    if (priced(n)) rows.push(["e-graph estimate (µs)", us(n.cost)]);
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
  if (!own.length) return false; // nothing of it to draw: the drawing stays as it is
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
  if (nodes.empty()) cy.elements().unselect();
  else focus(nodes);
  for (const li of document.querySelectorAll("#candidates li")) li.classList.toggle("current", li.dataset.anchor === cand.anchor);
  const rows = cand.kind === "rejected"
    ? cand.reasons.map((r) => [r.rule, `${r.message} (fix: ${r.fix})`])
    : [["estimated (µs, its solved fields)", cand.estimated_us], ["term", cand.term]];
  const top = cand.enodes.length ? enodes.get(cand.enodes[cand.enodes.length - 1]) : undefined;
  if (top && priced(top)) rows.splice(1, 0, ["e-graph estimate (µs)", us(top.cost)]);
  if (!cand.located) {
    rows.unshift(["e-graph", cand.kind === "rejected"
      ? "not in the e-graph: no e-node of this strategy was made (the reasons below say why)"
      : "not in the e-graph: its term was not found among the e-nodes"]);
  } else if (nodes.empty()) {
    rows.unshift(["e-graph", "its e-classes are beyond those the viewer draws (the JSON document has them)"]);
  }
  showDetails(`${cand.kind === "rejected" ? "rejected" : "plan"}: ${cand.strategy}`, rows);
}

function candidateList() {
  const ul = $("candidates");
  // the response's order is the ranking's: near one launch's time it is not by µs (say why)
  const us = candidates.filter((c) => c.kind !== "rejected").map((c) => c.estimated_us);
  $("rank-note").hidden = us.every((u, i) => i === 0 || us[i - 1] <= u);
  for (const c of candidates) {
    const li = el("li");
    li.dataset.anchor = c.anchor;
    li.className = c.kind;
    const a = el("a", c.kind === "rejected" ? `${c.strategy} (rejected)` : `${c.strategy}: ${c.estimated_us} µs estimated`);
    a.href = `#${c.anchor}`;
    a.addEventListener("click", (e) => { // the same anchor again fires no hashchange: go there anyway
      if (location.hash === a.hash) {
        e.preventDefault();
        goTo(c.anchor);
      }
    });
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
  const of = data.shown.length < data.eclass_count
    ? ` (searched the ${data.shown.length} e-classes the page holds, of ${data.eclass_count}: the JSON document has all)` : "";
  $("search-result").textContent = `${hitsNodes.length} e-node(s) in ${hitsClasses.size} e-class(es)${of}`;
  focus(matched);
}

function report() {
  const steps = (data.report && data.report.steps) || [];
  const byIter = new Map();
  for (const s of steps) {
    const row = byIter.get(s.iteration) || { matches: 0, added: 0, ms: 0, rulesets: new Map() };
    row.matches += s.matches;
    row.added += s.nodes_added;
    row.ms += s.time_ms;
    if (s.matches) row.rulesets.set(s.ruleset, (row.rulesets.get(s.ruleset) || 0) + s.matches);
    byIter.set(s.iteration, row);
  }
  const t = $("report");
  for (const [it, r] of byIter) {
    const tr = el("tr");
    const sets = [...r.rulesets].map(([name, n]) => `${name} ${n}`).join(", ");
    tr.append(el("td", it === 0 ? "finish" : String(it)), el("td", String(r.matches)), el("td", String(r.added)),
              el("td", r.ms.toFixed(2)), el("td", sets));
    t.append(tr);
  }
}

if (!chosen) {
  $("go-plan").disabled = true;
  $("go-plan").title = "no plan: the request is infeasible (its rejected strategies are listed)";
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
  window.legalsatViewer = { cy, collapsed, goTo, runSearch, idle: () => busy === 0, readyMs: performance.now() - started };
});
