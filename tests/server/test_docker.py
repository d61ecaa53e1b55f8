"""The Docker image without a Docker engine: hadolint on the Dockerfile; its shape (base pinned
by digest, dependencies from the lock before the code); the build context the .dockerignore
leaves; the lock against pyproject.toml; the compose file; then the image's exact install and
start commands (its COPY and RUN in order, ENV, CMD and HEALTHCHECK) replayed in a fresh
virtual environment with only the files of the build context."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

import httpx
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from legalsat.testing.live_server import LiveServer, free_port

from .conftest import need

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "docker" / "Dockerfile"
LOCK = ROOT / "docker" / "constraints.txt"


def instructions() -> list[tuple[str, str]]:
    text = re.sub(r"\\\n\s*", " ", DOCKERFILE.read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


# --- .dockerignore, as Docker reads it (moby's patternmatcher) ---

def _regex(pattern: str) -> re.Pattern:
    out, i = "", 0
    while i < len(pattern):
        c = pattern[i]
        if c == "*":
            if pattern[i + 1:i + 2] == "*":
                i += 1
                if pattern[i + 1:i + 2] == "/":
                    i += 1
                out += ".*" if i + 1 >= len(pattern) else "(.*/)?"
            else:
                out += "[^/]*"
        elif c == "?":
            out += "[^/]"
        elif c == "\\" and i + 1 < len(pattern):
            i += 1
            out += re.escape(pattern[i])
        elif c == "[":
            end = pattern.index("]", i)
            out += pattern[i:end + 1]
            i = end
        else:
            out += re.escape(c)
        i += 1
    return re.compile(out + "$")


def dockerignore(path: Path = ROOT / ".dockerignore") -> list[tuple[bool, re.Pattern, str]]:
    """(exception, regex, pattern) per rule, in order; the last rule that matches decides."""
    rules = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        neg = line.startswith("!")
        pat = os.path.normpath(line[1:].strip() if neg else line).lstrip("/")
        rules.append((neg, _regex(pat), pat))
    return rules


def excluded(rel: str, rules) -> bool:
    """Is this path (relative to the context root) left out? A rule matches a path or any of
    its parent directories."""
    parts = rel.split("/")
    prefixes = ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]
    out = False
    for neg, rx, _ in rules:
        if any(rx.match(p) for p in prefixes):
            out = not neg
    return out


def context_files(root: Path = ROOT) -> dict[str, int]:
    """Path -> size of every file the build context holds."""
    rules = dockerignore(root / ".dockerignore")
    exceptions = [pat for neg, _, pat in rules if neg]
    files = {}
    for d, dirs, names in os.walk(root):
        rel_d = os.path.relpath(d, root)
        rel_d = "" if rel_d == "." else rel_d + "/"
        # skip a left-out directory unless an exception may let something below it back in
        dirs[:] = [x for x in dirs if not excluded(rel_d + x, rules)
                   or any(p.startswith(rel_d + x + "/") or p.startswith("**") for p in exceptions)]
        for n in names:
            rel = rel_d + n
            if not excluded(rel, rules) and os.path.isfile(os.path.join(d, n)):
                files[rel] = os.path.getsize(os.path.join(d, n))
    return files


def test_dockerignore_rules_as_docker_reads_them():
    rules = dockerignore()
    for path in (".venv/lib/python3.12/site-packages/x.py", "venv/bin/python", ".git/HEAD",
                 "legalsat/__pycache__/api.cpython-312.pyc", "legalsat/server/__pycache__/a.pyc",
                 "legalsat/server/plans.sqlite3", "legalsat/plans.sqlite3-wal", "plans.sqlite3.corrupt-1",
                 ".whl/torch-2.13.0.whl", ".gl/x", "build/lib/legalsat/api.py", "dist/legalsat-0.3.0.whl",
                 "legalsat.egg-info/PKG-INFO", "viewer/node_modules/cytoscape/index.js", "tests/server/test_api.py",
                 ".pytest_cache/v/x", "legalsat/.hypothesis/x", "benchmarks/load_results.json",
                 "docker/Dockerfile", "legalsat/x/.venv/bin/python"):
        assert excluded(path, rules), path
    for path in ("pyproject.toml", "README.md", "docker/constraints.txt", "legalsat/__init__.py",
                 "legalsat/planner/build/__init__.py", "legalsat/server/static/viewer/viewer.js"):
        assert not excluded(path, rules), path


def test_build_context_is_small_and_holds_what_the_image_copies():
    files = context_files()
    bad = [f for f in files if re.search(r"(^|/)(\.venv|\.git|__pycache__|node_modules|\.whl|\.gl)(/|$)", f)
           or f.endswith((".sqlite3", ".whl", ".pyc"))]
    assert not bad, bad[:10]
    assert sum(files.values()) < 25 << 20, sum(files.values())  # the code: a few MB
    tracked = subprocess.run(["git", "ls-files", "legalsat"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    missing = [f for f in tracked if f not in files and (ROOT / f).exists()]
    assert not missing, missing[:10]  # every file of the package reaches the image
    for word, rest in instructions():
        if word == "COPY":
            for p in rest.split()[:-1]:
                assert p in files or any(f.startswith(p + "/") for f in files), p


def test_base_image_is_pinned_by_digest():
    base = dict(instructions())["FROM"].split()[0]
    assert re.fullmatch(r"python:3\.12-slim@sha256:[0-9a-f]{64}", base), base


def test_dependencies_are_installed_from_the_lock_before_the_code_is_copied():
    ins = instructions()
    copy_code = next(i for i, (w, r) in enumerate(ins) if w == "COPY" and r.split()[0] == "legalsat")
    deps = next(i for i, (w, r) in enumerate(ins) if w == "RUN" and "-c constraints.txt" in r)
    copy_lock = next(i for i, (w, r) in enumerate(ins) if w == "COPY" and "docker/constraints.txt" in r.split())
    assert copy_lock < deps < copy_code
    assert all(w != "COPY" or "legalsat" not in r.split()[:-1] for w, r in ins[:deps])
    after = [r for w, r in ins[copy_code:] if w == "RUN" and "pip install" in r]
    assert after and all("--no-deps" in r for r in after)  # the code's layer installs nothing else


def lock() -> dict[str, str]:
    pins = {}
    for line in LOCK.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            m = re.fullmatch(r"([A-Za-z0-9._-]+)==([A-Za-z0-9.+!-]+)", line.strip())
            assert m, f"not an exact pin: {line!r}"
            pins[canonicalize_name(m.group(1))] = m.group(2)
    return pins


def test_lock_pins_every_dependency_within_its_bounds():
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    wanted = [*data["build-system"]["requires"], *data["project"]["dependencies"],
              *data["project"]["optional-dependencies"]["redis"]]
    pins = lock()
    for spec in map(Requirement, wanted):
        name = canonicalize_name(spec.name)
        assert name in pins, f"{spec} has no pin in {LOCK.name}"
        assert spec.specifier.contains(pins[name], prereleases=True), f"{name}=={pins[name]} is outside {spec}"
    assert "python -m tools.lock_image" in LOCK.read_text()  # how to refresh it, at its top


def test_the_image_asks_for_what_the_lock_was_made_for():
    """The Dockerfile's requirement list (its python -c, run here) is tools.lock_image's."""
    from tools.lock_image import requirements

    run = next(r for w, r in instructions() if w == "RUN" and "-c constraints.txt" in r)
    snippet = run.split(" > requirements.txt", 1)[0]
    out = subprocess.run(["bash", "-c", snippet], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.split("\n")[:-1] == requirements() and any(r.startswith("redis") for r in requirements())


def test_compose_runs_two_replicas_on_one_redis_cache():
    compose = yaml.safe_load((ROOT / "docker" / "compose.yaml").read_text())
    services = compose["services"]
    redis = services["redis"]
    command = " ".join(redis["command"])
    assert "--maxmemory " in command and "--maxmemory-policy allkeys-lru" in command
    assert "healthcheck" in redis
    replicas = [s for s in services.values() if s.get("build", {}).get("dockerfile") == "docker/Dockerfile"]
    assert len(replicas) >= 2
    for s in replicas:
        assert s["environment"]["LEGALSAT_CACHE_URL"].startswith("redis://redis:")
        assert s["depends_on"]["redis"]["condition"] == "service_healthy"
        assert "/readyz" in " ".join(s["healthcheck"]["test"])
    assert len({p for s in replicas for p in s["ports"]}) == len(replicas)


def test_smoke_script_parses():
    assert subprocess.run(["bash", "-n", str(ROOT / "docker" / "smoke.sh")]).returncode == 0


def test_dockerfile_passes_hadolint():
    exe = need("hadolint")
    run = subprocess.run([exe, "--failure-threshold", "info", str(DOCKERFILE)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def test_image_runs_as_non_root_with_a_healthcheck():
    ins = dict(instructions())
    assert ins["USER"] not in ("root", "0")
    assert "/healthz" in ins["HEALTHCHECK"]
    assert json.loads(ins["CMD"]) == ["legalsat", "serve"]


def test_image_install_and_start_commands_in_a_fresh_venv(tmp_path):
    """COPY and RUN replayed in order in WORKDIR (a RUN that needs a file copied later fails
    here as in the image); the environment ends up with exactly the locked versions."""
    ins = instructions()
    workdir = dict(ins)["WORKDIR"]
    src = tmp_path / "src"
    src.mkdir()
    context = context_files()
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    bin_dir = env_dir / "bin"
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "VIRTUAL_ENV": str(env_dir)}
    ran = 0
    for word, rest in ins:
        if word == "COPY":  # only what the build context holds (.dockerignore)
            *paths, dest = rest.split()
            for p in paths:
                target = src / Path(p).name if dest.endswith("/") else src / dest
                for f in context:
                    if f == p or f.startswith(p + "/"):
                        out = target / f[len(p) + 1:] if f != p else target
                        out.parent.mkdir(parents=True, exist_ok=True)
                        shutil.copy(ROOT / f, out)
        elif word == "RUN" and ("pip " in rest or "python " in rest):
            cmd = rest.replace(workdir, str(src))
            run = subprocess.run(["bash", "-euo", "pipefail", "-c", cmd], cwd=src, env=env, capture_output=True,
                                 text=True, timeout=1200)
            assert run.returncode == 0, cmd + "\n" + run.stdout[-3000:] + run.stderr[-3000:]
            ran += 1
    assert ran == 2
    frozen = subprocess.run([str(bin_dir / "python"), "-m", "pip", "freeze", "--all", "--exclude", "pip",
                             "--exclude", "legalsat"], capture_output=True, text=True, check=True).stdout
    installed = {canonicalize_name(n): v for n, v in (line.split("==") for line in frozen.split())}
    assert installed == lock()  # the whole environment is the lock, nothing more or less

    image_env = {}
    for word, rest in ins:
        if word == "ENV":
            image_env.update(dict(kv.split("=", 1) for kv in shlex.split(rest)))
    port = free_port()
    image_env.update(LEGALSAT_HOST="127.0.0.1", LEGALSAT_PORT=str(port),  # loopback, not 0.0.0.0, in tests
                     LEGALSAT_CACHE_PATH=str(tmp_path / "cache" / "plans.sqlite3"), LEGALSAT_WORKERS="1")
    start = json.loads(dict(ins)["CMD"])
    env = {"PATH": env["PATH"], "HOME": str(tmp_path)}
    with LiveServer(command=[str(bin_dir / start[0]), *start[1:]], env={**env, **image_env},
                    port=port, log_path=str(tmp_path / "server.log")) as srv:
        health = json.loads(dict(ins)["HEALTHCHECK"].split("CMD", 1)[1])
        probe = subprocess.run([str(bin_dir / "python"), *health[1:]], env={**env, **image_env}, timeout=30)
        assert probe.returncode == 0
        body = (ROOT / "examples" / "optimize_transpose.json").read_text()
        r = httpx.post(srv.url + "/v1/optimize", content=body, timeout=60,
                       headers={"Content-Type": "application/json"})
        assert r.status_code == 200 and r.json()["status"] == "ok"
        assert sys.executable not in srv.command[0]  # really the fresh environment's legalsat
