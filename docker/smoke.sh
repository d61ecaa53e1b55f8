#!/usr/bin/env bash
# Smoke-test a built image: start it, wait until Docker reports it healthy, plan the example
# request, read /readyz and /metrics, stop it gracefully. Used by .ci/run and
# docker/ci-example.yml.
#   docker/smoke.sh IMAGE [PORT]
set -euo pipefail
image=${1:?usage: docker/smoke.sh IMAGE [PORT]}
port=${2:-8000}
cd "$(dirname "$0")/.."
name="legalsat-smoke-$$"
docker run -d --name "$name" -p "127.0.0.1:$port:8000" "$image" >/dev/null
trap 'docker rm -f "$name" >/dev/null 2>&1 || true' EXIT
for _ in $(seq 1 90); do
    status=$(docker inspect -f '{{.State.Health.Status}}' "$name")
    [ "$status" = healthy ] && break
    [ "$(docker inspect -f '{{.State.Running}}' "$name")" = true ] || { docker logs "$name"; exit 1; }
    sleep 2
done
[ "$status" = healthy ] || { docker logs "$name"; echo "not healthy: $status" >&2; exit 1; }
curl -fsS "localhost:$port/readyz" >/dev/null
curl -fsS -X POST "localhost:$port/v1/optimize" -H 'Content-Type: application/json' \
    --data @examples/optimize_transpose.json \
    | python3 -c 'import json, sys; assert json.load(sys.stdin)["status"] == "ok"'
curl -fsS "localhost:$port/metrics" | grep -q legalsat_http_requests_total
docker stop -t 35 "$name" >/dev/null
[ "$(docker inspect -f '{{.State.ExitCode}}' "$name")" = 0 ] || { docker logs "$name"; exit 1; }
echo "$image: healthy, planned, stopped cleanly"
