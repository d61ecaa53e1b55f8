"""The Docker image without a Docker engine: hadolint on the Dockerfile, then the image's
exact install and start commands (its RUN pip install, ENV and CMD, and the HEALTHCHECK
command) replayed in a fresh virtual environment with only the files the image copies."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import httpx

from legalsat.testing.live_server import LiveServer, free_port

from .conftest import need

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "docker" / "Dockerfile"


def instructions() -> list[tuple[str, str]]:
    text = re.sub(r"\\\n\s*", " ", DOCKERFILE.read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def test_dockerfile_passes_hadolint():
    exe = need("hadolint")
    run = subprocess.run([exe, "--failure-threshold", "info", str(DOCKERFILE)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def test_image_runs_as_non_root_with_a_healthcheck():
    ins = dict(instructions())
    assert ins["FROM"].startswith("python:3.12-slim")
    assert ins["USER"] not in ("root", "0")
    assert "/healthz" in ins["HEALTHCHECK"]
    assert json.loads(ins["CMD"]) == ["legalsat", "serve"]


def test_image_install_and_start_commands_in_a_fresh_venv(tmp_path):
    ins = instructions()
    src = tmp_path / "src"
    src.mkdir()
    for word, rest in ins:  # the files the image copies (into WORKDIR /src), and nothing else
        if word == "COPY":
            *paths, dest = rest.split()
            for p in paths:
                target = src / Path(p).name if dest.endswith("/") else src / dest
                if (ROOT / p).is_dir():
                    shutil.copytree(ROOT / p, target, ignore=shutil.ignore_patterns("__pycache__"))
                else:
                    shutil.copy(ROOT / p, target)
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    bin_dir = env_dir / "bin"
    installs = [rest for word, rest in ins if word == "RUN" and "pip install" in rest]
    assert len(installs) == 1
    cmd = shlex.split(installs[0].replace("/src", str(src)))
    run = subprocess.run([str(bin_dir / cmd[0]), *cmd[1:]], capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]

    image_env = {}
    for word, rest in ins:
        if word == "ENV":
            image_env.update(dict(kv.split("=", 1) for kv in shlex.split(rest)))
    port = free_port()
    image_env.update(LEGALSAT_HOST="127.0.0.1", LEGALSAT_PORT=str(port),  # loopback, not 0.0.0.0, in tests
                     LEGALSAT_CACHE_PATH=str(tmp_path / "cache" / "plans.sqlite3"), LEGALSAT_WORKERS="1")
    start = json.loads(dict(ins)["CMD"])
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "HOME": str(tmp_path)}
    with LiveServer(command=[str(bin_dir / start[0]), *start[1:]], env={**env, **image_env},
                    port=port, log_path=str(tmp_path / "server.log")) as srv:
        health = json.loads(dict(ins)["HEALTHCHECK"].split("CMD", 1)[1])
        probe = subprocess.run([str(bin_dir / "python"), *health[1:]], env={**env, **image_env}, timeout=30)
        assert probe.returncode == 0
        body = (ROOT / "examples" / "optimize_transpose.json").read_text()
        r = httpx.post(srv.url + "/v1/optimize", content=body, timeout=60)
        assert r.status_code == 200 and r.json()["status"] == "ok"
        assert sys.executable not in srv.command[0]  # really the fresh environment's legalsat
