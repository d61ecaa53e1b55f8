"""Asynchronous copy protocols: the schedule a pipelined TMA kernel runs (mbarriers, TMA
loads and stores, bulk groups), checked for hangs and races, and synthesized for plans.

    model    the protocol as frozen data (barrier and buffer arrays, roles of affine blocks)
    verify   the typestate verifier: execute every relevant trip count, judge on the
             happens-before graph (networkx)
    synth    the verified protocol of a TMA pipeline from what a plan knows (box bytes, stages)

Their JSON form is legalsat.schemas.protocol's (what `verify-pipeline` reads and plans carry).
"""
