"""The planner: one request through named stages (legalsat.planner.stages).

    rules/     the egglog program: term language, analyses, layout algebra, strategies
               (assembled from the Strategy / Distribution / Consumer / CostFact enums)
    saturate   equality saturation under limits, with per-iteration, per-ruleset reports
    extract    the cheapest term of every strategy, parsed into a formulation
    solve      z3 field problems (tiles, boxes, stages, blocks) with explained unsat cores
    build/     a formulation + solved fields -> a typed plan, per movement kind
    prove      islpy proofs that a plan moves exactly the request's elements
    reasons    why a strategy has no plan, in the catalogue's terms
    stages     the named stages, callable one at a time, each with a dump
    optimize   the whole pipeline: PlanRequest -> PlanResponse

Inputs and outputs are frozen dataclasses (request, plan); the pydantic models of the
boundary live in legalsat.schemas. Importing this package loads neither egglog nor z3.
"""
