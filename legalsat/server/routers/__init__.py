"""One router per resource; every /v1 router requires the bearer token when one is set."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.routing import APIRoute


def answer_head(router: APIRouter) -> APIRouter:
    """HEAD on each of the router's GET routes (load balancers, uptime checks and link checkers
    probe with it; FastAPI's routes answer only the methods they name): the GET's status and
    headers, through the same dependencies; the server sends no body. Called once, where the
    router is defined, after its routes."""
    for route in [r for r in router.routes if isinstance(r, APIRoute) and "GET" in r.methods]:
        # a route's path carries the router's prefix, which add_api_route puts in front again
        router.add_api_route(route.path.removeprefix(router.prefix), route.endpoint, methods=["HEAD"], include_in_schema=False,
                             dependencies=route.dependencies, response_class=route.response_class)
    return router
