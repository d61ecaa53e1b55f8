"""The long-running service: FastAPI app, worker pool, plan cache, e-graph viewer.

Only this subpackage imports FastAPI; the planner underneath does not know it exists.
"""

__all__ = ["create_app", "serve"]


def __getattr__(name: str):
    """`create_app` and `serve`, imported on first use: a process that needs one light module
    of this package (a `legalsat batch` pool worker's `lifetime`) does not load FastAPI."""
    if name in __all__:
        from legalsat.server import app

        return getattr(app, name)
    raise AttributeError(f"module 'legalsat.server' has no attribute {name!r}")
