"""`legalsat optimize --format summary`: an optimize response as a short table a person reads.

    summary(response) -> text (about a dozen lines)

Two lines per plan (rank, strategy, estimated time, bandwidth; then why: the headline of its
`explain`, and a re-allocation the plan needs), one per rejected strategy (its first reason's
code and message, wrapped: a reason cut mid-number said the wrong thing). The command asks
the planner for `explain`, so the "why" is the planner's own.
"""

from __future__ import annotations

import textwrap

WIDTH = 120  # columns a line may take before it is cut (a warning is wrapped: its advice is the point)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def summary(out: dict) -> str:
    """The response `out` (legalsat.optimize's dict) as a short table."""
    took = out.get("timings_ms", {}).get("total")
    head = f"legalsat: {out['status']} on {out['target']}" + (f", planned in {took:.0f} ms" if took is not None else "")
    egraph = out.get("egraph") or {}
    if egraph.get("stop_reason") not in (None, "saturated"):  # what was not explored may hold the missing plans
        head += f" (saturation stopped by its {egraph['stop_reason']} after {egraph.get('iterations')} iteration(s))"
    lines = [head, "  " + _cut(out["term"], WIDTH - 2)]
    plans = out.get("plans", [])
    if plans:
        w = max(len(p["strategy"]) for p in plans)
        times = [p["cost"]["estimated_us"] for p in plans]
        lines.append("plans, best first" + ("" if times == sorted(times) else
                                            " (near one launch's time: by estimate + largest program; see explain)")
                     + ":")
        for i, p in enumerate(plans):
            cost = p["cost"]
            rate = cost.get("estimated_tbps")  # a small copy's rate in GB/s: 0.00 TB/s said nothing
            tile = p.get("kind") == "load_tile"  # its rate counts the shared-memory writes: the read rate is half
            rate = rate / 2 if rate and tile else rate
            tbps = "" if not rate else f"{rate:.2f} TB/s" if rate >= 0.1 else f"{rate * 1000:.1f} GB/s"
            tbps += " read" if tbps and tile else ""
            lines.append(f"  {i + 1}. {p['strategy']:<{w}} {cost['estimated_us']:>10.2f} us {tbps:>10}")
            if p.get("explain"):
                lines.append(_cut(f"       {p['explain'][0]}", WIDTH))
            for r in p.get("relayout") or []:  # the plan runs only on a tensor re-allocated so
                lines.append(f"       needs {r['side']} re-allocated with a row pitch of {r['new_stride_bytes']} bytes "
                             f"(not {r['old_stride_bytes']}): allow_padding")
    rejected = out.get("rejected", [])
    if rejected:
        w = max(len(r["strategy"]) for r in rejected)
        lines.append("rejected:")
        for r in rejected:
            reason = r["reasons"][0] if r["reasons"] else {"rule": "", "message": ""}
            more = f" (+{len(r['reasons']) - 1} more)" if len(r["reasons"]) > 1 else ""
            lines += textwrap.wrap(f"  {r['strategy']:<{w}}  {reason['rule']}: {reason['message']}{more}", WIDTH,
                                   subsequent_indent=" " * (w + 4))
    for warning in out.get("warnings", []) or []:
        w = warning if isinstance(warning, dict) else {"message": str(warning)}
        lines += textwrap.wrap(f"warning: {w.get('message')}", WIDTH, subsequent_indent="  ")
        if w.get("fix"):
            lines += textwrap.wrap(f"  fix: {w['fix']}", WIDTH, subsequent_indent="    ")
    return "\n".join(lines) + "\n"
