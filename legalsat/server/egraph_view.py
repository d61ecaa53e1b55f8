"""Kept e-graphs as data and as pictures: `GET /v1/egraphs/{id}` and `/v1/egraphs/{id}/view`.

The input is egglog's egraph-serialize JSON (`nodes` keyed by node id, each with `op`,
`children` node ids and `eclass`; `class_data` with each class's sort). legalsat's term
sorts (Dims, Mov, Plan) are the e-classes shown; analysis functions (Elems, SrcRun, ...)
and relations (TmaOk, Has, Div, ...) become values of the e-class they describe, and
`cost_table_<Ctor>` entries become the cost of the constructor e-node they price. The
extracted plans are located in the e-graph by matching their terms against the hashcons
(op, child e-classes) -> e-node, so the picture highlights exactly the chosen e-nodes.

Nothing from a request reaches the SVG: node and cluster labels are built from operator
names and integers only; the HTML page escapes every string it shows.
"""

from __future__ import annotations

import html
import json
import shutil
import subprocess
from collections import defaultdict, deque

from legalsat.diagnostics import InputError
from legalsat.terms.sexpr import parse_sexp
from legalsat.terms.strategy import Strategy

_STRATEGY_BY_CODE = {s.code: s.value for s in Strategy}

# relation and function names shown with the words the service's users know
_LABELS = {"TmaOk": "tma_legal", "Div": "strides_divisible_by", "Has": "strategies",
           "Transp": "transposing", "Small": "small_side_bytes", "Bytes": "bytes",
           "Width": "access_bytes", "SrcRun": "src_run", "DstRun": "dst_run", "Elems": "elements",
           "Rank": "rank", "MaxD": "max_dst_stride", "MaxS": "max_src_stride", "Clustered": "clustered"}


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
            if target is not None:
                nodes[target]["cost"] = g.value(out)
            continue
        if not terms:
            facts[f"{op} {' '.join(map(str, args))}".strip()] = None if g.is_value(out) and \
                out not in g.literal else g.value(out)
            continue
        name = _LABELS.get(op, op)
        entry = classes[terms[0]]["analyses"]
        if out in g.literal:  # a function: one value per e-class
            entry[name] = g.value(out)
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
    return {"id": egraph_id, "request_id": response.get("request_id"), "target": response.get("target"),
            "term": response.get("term"), "status": response.get("status"),
            "stop_reason": eg.get("stop_reason"), "iterations": eg.get("iterations"),
            "eclass_count": len(classes), "enode_count": len(nodes),
            "eclasses": list(classes.values()), "enodes": list(nodes.values()),
            "extracted": extracted, "rejected": rejected, "target_facts": facts}


# --- drawing ---

def _dot_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _fmt(v) -> str:
    if v is True:
        return "yes"
    if isinstance(v, list):
        return ",".join(_fmt(x) if not isinstance(x, list) else "(" + " ".join(map(str, x)) + ")" for x in v)
    return str(v)


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


def to_dot(model: dict, limit: int) -> tuple[str, int]:
    """Graphviz DOT of the e-graph (clusters = e-classes); returns (dot, classes drawn)."""
    keep = shown_classes(model, limit)
    index = {cid: i for i, cid in enumerate(keep)}
    cls = {c["id"]: c for c in model["eclasses"]}
    by_node = {n["id"]: n for n in model["enodes"]}
    chosen = set(model["extracted"][0]["enodes"]) if model["extracted"] else set()
    chosen_classes = set(model["extracted"][0]["eclasses"]) if model["extracted"] else set()
    other_plans = {n for p in model["extracted"][1:] for n in p["enodes"]}
    rejected = {n for r in model["rejected"] for n in r["enodes"]}
    out = ["digraph egraph {", "compound=true; rankdir=TB;",
           'node [shape=box, style="rounded,filled", fillcolor=white, fontname="monospace", fontsize=10];',
           'graph [fontname="monospace", fontsize=9, style="rounded"];', "edge [arrowsize=0.6];"]
    for cid in keep:
        c = cls[cid]
        lines = [f"{cid}  [{c['sort']}]" + ("  root" if c["root"] else "")]
        lines += [f"{k}={_fmt(v)}" for k, v in sorted(c["analyses"].items())]
        hot = cid in chosen_classes
        out.append(f"subgraph cluster_{index[cid]} {{ label={_dot_str(chr(10).join(lines))}; labeljust=l; "
                   f"color={'goldenrod' if hot else 'gray60'}; penwidth={3 if hot else 1};")
        for nid in c["nodes"]:
            n = by_node[nid]
            lits = [k.split("-", 1)[1] if k not in cls else "·" for k in n["children"]]
            label = " ".join([n["op"], *lits]) + (f"\ncost {n['cost']}" if n["cost"] is not None else "")
            style = ""
            if nid in chosen:
                style = ', fillcolor=gold, penwidth=3, class="extracted"'
            elif nid in other_plans:
                style = ', fillcolor=lightyellow, penwidth=2, class="candidate"'
            elif nid in rejected:
                style = ', color=firebrick, penwidth=2, class="rejected"'
            out.append(f"  {_dot_str(nid)} [label={_dot_str(label)}, id={_dot_str(nid)}{style}];")
        out.append("}")
    for cid in keep:
        for nid in cls[cid]["nodes"]:
            for k in by_node[nid]["children"]:
                if k in index and cls[k]["nodes"]:
                    out.append(f"{_dot_str(nid)} -> {_dot_str(cls[k]['nodes'][0])} [lhead=cluster_{index[k]}];")
    out.append("}")
    return "\n".join(out), len(keep)


def render_svg(dot: str, timeout_s: float = 20.0) -> tuple[str | None, str | None]:
    """(svg, None) from graphviz `dot`, or (None, why not) when dot is missing or fails."""
    exe = shutil.which("dot")
    if exe is None:
        return None, "graphviz `dot` is not installed on the server (apt-get install graphviz)"
    try:
        run = subprocess.run([exe, "-Tsvg"], input=dot.encode(), capture_output=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None, f"graphviz took more than {timeout_s:.0f} s; lower LEGALSAT_VIEWER_MAX_ECLASSES"
    if run.returncode != 0:
        return None, "graphviz failed: " + run.stderr.decode(errors="replace")[:500]
    svg = run.stdout.decode()
    return svg[svg.find("<svg"):], None


_CSS = """body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left;
vertical-align:top}code{font-size:.9em}.note{background:#fff6d5;border:1px solid #e0c060;padding:.4em .8em}
#graph{overflow:auto;border:1px solid #ddd;max-height:80vh}.legend span{padding:0 .6em;margin-right:.5em}"""


def view_html(model: dict, svg: str | None, shown: int, why_no_svg: str | None) -> str:
    """The viewer page: summary, notes, the SVG, plans and rejected candidates (all escaped)."""
    e = html.escape
    rows = "".join(f"<tr><th>{e(k)}</th><td><code>{e(str(v))}</code></td></tr>" for k, v in (
        ("request", model["request_id"]), ("target", model["target"]), ("term", model["term"]),
        ("status", model["status"]), ("stop reason", model["stop_reason"]),
        ("e-classes / e-nodes", f"{model['eclass_count']} / {model['enode_count']}")))
    notes = []
    if shown < model["eclass_count"]:
        notes.append(f"Large e-graph: showing {shown} of {model['eclass_count']} e-classes (the extracted "
                     "plans, the root and their neighbours); the JSON at ../" + e(model["id"]) + " has all.")
    if why_no_svg:
        notes.append("No picture: " + e(why_no_svg))
    plans = "".join(
        f"<tr class='plan'><td>{'chosen' if p['chosen'] else ''}</td><td>{e(p['strategy'])}</td>"
        f"<td><code>{e(p['term'])}</code></td><td>{e(str(p['estimated_us']))}</td></tr>" for p in model["extracted"])
    rejected = "".join(
        f"<tr class='rejected'><td>{e(r['strategy'])}</td><td><code>{e(r.get('term') or '')}</code></td><td>"
        + "<br>".join(f"<b>{e(x['rule'])}</b>: {e(x['message'])} <i>fix: {e(x['fix'])}</i>" for x in r["reasons"])
        + "</td></tr>" for r in model["rejected"])
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>legalsat e-graph {e(model['id'])}</title>
<style>{_CSS}</style></head><body>
<h1>legalsat e-graph <code>{e(model['id'])}</code></h1>
<table>{rows}</table>
{''.join(f'<p class="note">{n}</p>' for n in notes)}
<p class="legend"><span style="background:gold">extracted plan</span><span style="background:lightyellow">
other plans</span><span style="border:2px solid firebrick">rejected candidates</span>
clusters are e-classes, labelled with their analysis values</p>
<div id="graph">{svg or ''}</div>
<h2>Plans</h2><table><tr><th></th><th>strategy</th><th>term</th><th>estimated µs</th></tr>{plans}</table>
<h2>Rejected</h2><table><tr><th>strategy</th><th>term</th><th>reasons</th></tr>{rejected}</table>
</body></html>"""
