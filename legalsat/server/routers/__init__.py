"""One router per resource; every /v1 router requires the bearer token when one is set."""
