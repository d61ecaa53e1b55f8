"""From saturated formulations to plans: asynchronous protocols (verification and synthesis)."""
