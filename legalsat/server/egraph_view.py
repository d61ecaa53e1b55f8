"""Kept e-graphs as data and as an interactive page: `GET /v1/egraphs/{id}` and `/v1/egraphs/{id}/view`.

The input is egglog's egraph-serialize JSON (`nodes` keyed by node id, each with `op`,
`children` node ids and `eclass`; `class_data` with each class's sort). legalsat's term
sorts (Dims, TDims, Mov, Plan) are the e-classes shown; analysis functions (Elems, SrcRun, ...)
and relations (TmaOk, Has, Div, ...) become values of the e-class they describe, and
the `cost_table_<Ctor>` entries of Plan e-nodes become their cost (the e-graph's estimated
time in picoseconds, what extraction ranks by; the other sorts' entries are not times). The
extracted plans are located in the e-graph by matching their terms against the hashcons
(op, child e-classes) -> e-node, so the picture highlights exactly the chosen e-nodes.

The page (`view_html`) is legalsat's viewer (viewer/src/viewer.js, bundled with Cytoscape.js
and dagre into legalsat/server/static/viewer): the document travels inside the page as JSON in a
non-executing <script type="application/json"> element, escaped so that no request text can
close it, and the page's Content-Security-Policy runs only the service's own script.
"""

from __future__ import annotations

import html
import json
from collections import defaultdict, deque

from legalsat.diagnostics import InputError
from legalsat.terms.sexpr import parse_sexp
from legalsat.terms.strategy import Strategy

_STRATEGY_BY_CODE = {s.code: s.value for s in Strategy}
_CAND_CODES = ", ".join(f"{code} {name}" for code, name in sorted(_STRATEGY_BY_CODE.items()))

# relation and function names shown with the words the service's users know
_LABELS = {"TmaOk": "tma_legal", "Div": "strides_divisible_by", "Has": "strategies",
           "Transp": "transposing", "Small": "small_side_bytes", "Bytes": "bytes",
           "Width": "access_bytes", "SrcRun": "src_run", "DstRun": "dst_run", "Elems": "elements",
           "Rank": "rank", "MaxD": "max_dst_stride", "MaxS": "max_src_stride", "Clustered": "clustered",
           "TElems": "tile_elements", "TTiles": "tile_positions", "TRank": "tile_rank", "TBig": "dims_spanned",
           "TInner": "inner_tile_extent", "TBcast": "broadcast", "LoadWidth": "access_bytes",
           "TOuterDiv": "outer_strides_divisible_by", "BcastOf": "without_broadcast",
           "Run": "staged_run_bytes", "SortPs": "group_sort_us"}
# analysis values kept in picoseconds by the rules (extraction's unit), shown in µs
_PS_TO_US = {"SortPs"}


class _Graph:
    """The serialized e-graph, indexed."""

    def __init__(self, snapshot: dict):
        self.nodes: dict = snapshot.get("nodes", {})
        self.class_data: dict = snapshot.get("class_data", {})
        self.members: dict[str, list[str]] = defaultdict(list)
        for nid, n in self.nodes.items():
            self.members[n["eclass"]].append(nid)
        self.literal: dict[str, str] = {}  # primitive class -> its value's text
        for nid, n in self.nodes.items():
            if nid.startswith("primitive-"):
                self.literal[n["eclass"]] = n["op"]

    def sort(self, cid: str) -> str:
        return self.class_data.get(cid, {}).get("type", cid.rsplit("-", 1)[0])

    def is_value(self, cid: str) -> bool:
        """Primitive values (i64, ...) and relation outputs (@...Sort): not terms."""
        return cid in self.literal or self.sort(cid).startswith("@")

    def child_class(self, nid: str) -> str:
        return self.nodes[nid]["eclass"]

    def value(self, cid: str):
        text = self.literal.get(cid, cid.split("-", 1)[-1])
        try:
            return int(text)
        except ValueError:
            return text


def egraph_model(egraph_id: str, response: dict, snapshot_json: str) -> dict:
    """The kept e-graph as JSON (see the module docstring for what goes where)."""
    g = _Graph(json.loads(snapshot_json))
    classes: dict[str, dict] = {}
    for cid in g.members:
        if not g.is_value(cid):
            classes[cid] = {"id": cid, "sort": g.sort(cid), "nodes": [], "analyses": {},
                            "root": g.class_data.get(cid, {}).get("let") == "$root"}
    nodes: dict[str, dict] = {}
    hashcons: dict[tuple, str] = {}
    analyses, facts = [], {}
    for nid, n in g.nodes.items():
        if nid.startswith("primitive-"):
            continue
        kids = [g.child_class(c) for c in n["children"]]
        if n["eclass"] in classes:
            nodes[nid] = {"id": nid, "op": n["op"], "eclass": n["eclass"], "children": kids,
                          "cost": None}
            classes[n["eclass"]]["nodes"].append(nid)
            hashcons[(n["op"], tuple(kids))] = nid
        else:
            analyses.append((n, kids))
    for n, kids in analyses:
        op, out = n["op"], n["eclass"]
        terms = [k for k in kids if k in classes]
        args = [g.value(k) for k in kids if k not in classes]
        if op.startswith("cost_table_"):
            target = hashcons.get((op[len("cost_table_"):], tuple(kids)))
            if target is not None and classes[nodes[target]["eclass"]]["sort"] == "Plan":
                nodes[target]["cost"] = g.value(out)
            continue
        if not terms:
            facts[f"{op} {' '.join(map(str, args))}".strip()] = None if g.is_value(out) and \
                out not in g.literal else g.value(out)
            continue
        name = _LABELS.get(op, op)
        entry = classes[terms[0]]["analyses"]
        if out in g.literal:  # a function: one value per e-class
            value = g.value(out)
            entry[name] = value / 1e6 if op in _PS_TO_US and isinstance(value, (int, float)) else value
        else:  # a relation: a fact, possibly with arguments
            if op == "Has":
                args = [_STRATEGY_BY_CODE.get(a, a) for a in args]
            if op in ("PadD", "PadS") and len(terms) > 1:
                args = [terms[1], *args]
            vals = entry.setdefault(name, [])
            if args:
                vals.append(args[0] if len(args) == 1 else args)
    for c in classes.values():
        for k, v in c["analyses"].items():
            if v == []:
                c["analyses"][k] = True
    for c in classes.values():  # a class's cost: its cheapest priced e-node
        costs = [nodes[n]["cost"] for n in c["nodes"] if nodes[n]["cost"] is not None]
        if costs:
            c["analyses"]["cost_ps"] = min(costs)

    def locate(term_text: str | None) -> dict:
        found_nodes, found_classes, ok = [], [], term_text is not None

        def walk(t):
            nonlocal ok
            if not isinstance(t, list):
                cid = f"i64-{t}"
                return cid if cid in g.literal else None
            kids = [walk(a) for a in t[1:]]
            nid = hashcons.get((t[0], tuple(kids))) if None not in kids else None
            if nid is None:
                ok = False
                return None
            found_nodes.append(nid)
            found_classes.append(nodes[nid]["eclass"])
            return nodes[nid]["eclass"]

        if term_text:
            try:
                walk(parse_sexp(term_text))
            except (InputError, KeyError):
                ok = False
        return {"located": ok, "enodes": found_nodes, "eclasses": list(dict.fromkeys(found_classes))}

    extracted = [{"strategy": p["strategy"], "term": p["term"], "estimated_us": p["cost"]["estimated_us"],
                  "chosen": i == 0, **locate(p["term"])} for i, p in enumerate(response.get("plans", []))]
    rejected = [{**r, **locate(r.get("term"))} for r in response.get("rejected", [])]
    eg = response.get("egraph", {})
    return {"report": eg.get("report"), "id": egraph_id, "request_id": response.get("request_id"), "target": response.get("target"),
            "term": response.get("term"), "status": response.get("status"),
            "stop_reason": eg.get("stop_reason"), "iterations": eg.get("iterations"),
            "eclass_count": len(classes), "enode_count": len(nodes),
            "eclasses": list(classes.values()), "enodes": list(nodes.values()),
            "extracted": extracted, "rejected": rejected, "target_facts": facts}


# --- the page ---

def shown_classes(model: dict, limit: int) -> list[str]:
    """The e-classes drawn: all of them up to `limit`; past it, the extracted plans' classes,
    the root, then their neighbours breadth-first until `limit`."""
    ids = [c["id"] for c in model["eclasses"]]
    if len(ids) <= limit:
        return ids
    known = set(ids)
    adj: dict[str, set] = defaultdict(set)
    for n in model["enodes"]:
        for k in n["children"]:
            if k in known:
                adj[n["eclass"]].add(k)
                adj[k].add(n["eclass"])
    seeds = [c for p in model["extracted"] for c in p["eclasses"]]
    seeds += [c["id"] for c in model["eclasses"] if c["root"]]
    seen = list(dict.fromkeys(seeds))[:limit]
    frontier = deque(seen)
    chosen = set(seen)
    while frontier and len(seen) < limit:
        for k in sorted(adj[frontier.popleft()]):
            if k not in chosen and len(seen) < limit:
                chosen.add(k)
                seen.append(k)
                frontier.append(k)
    return seen


# The viewer page runs the service's own script and nothing else: request text stays text.
VIEW_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
            "connect-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")

# the JSON island: `<`, `>` and `&` as escapes, so no string can end the element or open a comment
_ISLAND = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


def view_html(model: dict, shown: list[str], first: list[str], collapse_above: int, static: str) -> str:
    """The viewer page for `model` (egraph_model's document): the e-classes `shown` can be
    drawn, `first` (a prefix of `shown`: the plans' neighbourhood) are drawn when it opens;
    past `collapse_above` e-nodes the e-classes start collapsed, except the chosen plan's.
    `static` is the URL prefix of the service's static assets. Every string is escaped."""
    e = html.escape
    rows = "".join(f"<tr><th>{e(k)}</th><td><code>{e(str(v))}</code></td></tr>" for k, v in (
        ("request", model["request_id"]), ("target", model["target"]), ("term", model["term"]),
        ("status", model["status"]), ("stop reason", model["stop_reason"]),
        ("iterations", model["iterations"]),
        ("e-classes / e-nodes", f"{model['eclass_count']} / {model['enode_count']}")))
    notes = []
    if len(shown) < model["eclass_count"]:
        notes.append(f"Large e-graph: the viewer draws at most {len(shown)} of its {model['eclass_count']} "
                     "e-classes (the extracted plans, the root and their neighbours; LEGALSAT_VIEWER_MAX_ECLASSES); "
                     "the JSON at ../" + e(model["id"]) + " has all.")
    large = model["enode_count"] > collapse_above
    if large and model["extracted"]:
        notes.append(f"Over {collapse_above} e-nodes (LEGALSAT_VIEWER_COLLAPSE_ENODES): the viewer opens on the "
                     "chosen plan's e-classes and the e-classes of their arguments, collapsed; \"Draw all\" "
                     "draws the rest, double-clicking an e-class opens or closes it.")
    elif len(first) < len(shown):
        notes.append(f"Opened on the {len(first)} e-classes nearest the plans (LEGALSAT_VIEWER_FIRST_ECLASSES); "
                     "searching, a candidate's link or \"Draw all\" draws more.")
    elif large:
        notes.append(f"Over {collapse_above} e-nodes (LEGALSAT_VIEWER_COLLAPSE_ENODES): e-classes start "
                     "collapsed; double-click one to open or close it.")
    # the page carries only what it can draw (the counts above are the whole e-graph's)
    keep = set(shown)
    doc = {**model, "eclasses": [c for c in model["eclasses"] if c["id"] in keep],
           "enodes": [n for n in model["enodes"] if n["eclass"] in keep],
           "shown": shown, "first": first, "collapse_above": collapse_above}
    island = json.dumps(doc, ensure_ascii=False, separators=(",", ":")).translate(_ISLAND)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>legalsat e-graph {e(model['id'])}</title>
<link rel="icon" href="data:,">
<!-- the id is Cytoscape's own: finding its stylesheet present, it injects no inline <style>
     (which the CSP would refuse); viewer.css holds the rule it would have added -->
<link rel="stylesheet" id="__________cytoscape_stylesheet" href="{e(static)}/viewer/viewer.css"></head><body>
<div id="graph" aria-label="e-graph"></div>
<div id="panel">
<h1>legalsat e-graph <code>{e(model['id'])}</code></h1>
<table id="summary">{rows}</table>
{''.join(f'<p class="note">{n}</p>' for n in notes)}
<div class="controls">
<button id="go-plan" type="button">Go to the chosen plan</button><button id="fit" type="button">Fit</button>
<button id="draw-all" type="button" hidden>Draw all</button>
<button id="expand-all" type="button">Expand all</button><button id="collapse-all" type="button">Collapse all</button>
<form id="search-form"><input id="search" type="search" placeholder="operator or e-class id">
<button type="submit">Search</button> <span id="search-result"></span></form></div>
<p class="legend"><span class="chosen">chosen plan</span><span class="plan">other plans</span>
<span class="rejected">rejected</span><span class="collapsed">collapsed e-class</span><br>
Boxes are e-classes (sort, id, cheapest cost) holding their e-nodes (operator, literal arguments,
cost); arrows go from an e-node to the e-classes of its arguments. A plan e-node's µs is the
e-graph's estimate, which extraction ranks by; a plan's µs in the list below is its estimate
once its fields are solved (tiles, boxes, stages), which the response reports. Click for analysis values;
double-click an e-class to collapse or expand it. <code>Lower m</code>: a movement that needs a
plan; <code>Cand k m</code>: every plan of strategy code k for it ({_CAND_CODES}); <code>Copy eb sa da dims</code>: element bytes, base alignments,
dims; <code>DCons n s d</code>: extent, src and dst strides in elements (README: "The term
language").</p>
<h2>Candidates</h2><ul id="candidates"></ul>
<p id="rank-note" class="legend" hidden>The plans are not in the order of their µs: near one launch's time
(within 1.1 launches) they rank by their estimate plus their largest program's time alone, pointer kernels
before TMA pipelines and shuffles (the response's <code>explain</code> gives each plan's key).</p>
<h2>Selected</h2><div id="details"><p>Click an e-node or e-class.</p></div>
<h2>Saturation, per iteration</h2>
<table id="report"><tr><th>iteration</th><th>matches</th><th>e-nodes added (net)</th><th>ms</th><th>rulesets</th></tr></table>
<p>Net: rebuilding merges e-nodes found equal, so a step can remove more than it adds; the
count is over every table of the e-graph (the analyses' and relations' rows too), so it sums to
more than the term e-nodes counted above.
<code>finish</code>: the analysis and strategy runs after the last round, which price every
form the rounds made.</p>
</div>
<script id="egraph-data" type="application/json">{island}</script>
<script src="{e(static)}/viewer/viewer.js"></script>
</body></html>"""
