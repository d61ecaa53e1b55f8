"""egglog rulesets of the planner, one family per module, written in egglog's own language.

    language    sorts and constructors of the term language, analysis tables
    analysis    e-class analyses (ruleset `analysis`): sizes, runs, divisibility, TMA facts
    layout      layout algebra (ruleset `layout`): reorder, coalesce, unit dims, split,
                widen, ragged core + tail; padding (ruleset `padding`, only when allowed)
    strategies  strategy introduction and estimated time (ruleset `strategy`)
    program     the assembly: placeholders filled from the enums, a target's cost facts seeded

Every rule has a `:name`, which saturation reports count matches by.
"""
