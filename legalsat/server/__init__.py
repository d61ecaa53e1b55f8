"""The long-running service: FastAPI app, worker pool, plan cache, e-graph viewer.

Only this subpackage imports FastAPI; the planner underneath does not know it exists.
"""

from legalsat.server.app import create_app, serve

__all__ = ["create_app", "serve"]
