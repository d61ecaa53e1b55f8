"""What the tests, the benchmarks and the tools share, importable like any module (never a
path edit): the planner's request suite, the kernel workloads, PyTorch references and the
inputs both run on, example protocols, and a live `legalsat serve` for end-to-end tests.

    planner_suite     LLM and CNN requests (data/planner_suite.jsonl) and the view helpers
    workloads         the kernel benchmark's workloads and small odd cases
    torch_reference   PyTorch's op for a planned movement, random inputs, bitwise comparison
    protocols         correct protocols and seeded bugs for the verifier
    live_server       a real service process on a loopback port
    redis_server      a real redis-server on a loopback port (the shared plan cache's tests)
    browser           the viewer and the API docs in headless Chromium
    tools             system tools a test needs: skipped where missing, failed where CI requires them

Nothing in the rest of legalsat imports this package.
"""
