"""Write docker/constraints.txt, the lock the service image installs with: the exact version
of every package `pip install '.[redis]'` brings (and of the build backend), resolved by the
image's Python in a fresh virtual environment.

    python -m tools.lock_image --python python3.12             # add what is new, keep the pins
    python -m tools.lock_image --python python3.12 --upgrade   # the newest pyproject.toml allows

Without --upgrade the current pins are kept (the resolve is constrained by the file itself),
so a dependency added to pyproject.toml gets a pin and nothing else moves. Any CPython of the
image's minor version on Linux will do; in the base image itself:

    docker run --rm -v "$PWD:/repo" -w /repo python:3.12-slim python -m tools.lock_image --python python
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "docker" / "constraints.txt"
EXTRAS = ("redis",)  # the optional dependencies the image installs

HEADER = """\
# Exact versions of every package the service image installs (docker/Dockerfile: pip install
# -c constraints.txt): its runtime dependencies with the `redis` extra, and the build backend.
# Generated, do not edit by hand; refresh with (any CPython {minor} on Linux, or inside the
# base image):
#   python -m tools.lock_image --python python{minor}             # pin what is new, keep the rest
#   python -m tools.lock_image --python python{minor} --upgrade   # the newest pyproject.toml allows
"""


def requirements(pyproject: Path = ROOT / "pyproject.toml") -> list[str]:
    """What the image asks pip for: the build backend, the dependencies and EXTRAS."""
    data = tomllib.loads(pyproject.read_text())
    project = data["project"]
    out = list(data["build-system"]["requires"]) + list(project["dependencies"])
    for extra in EXTRAS:
        out += project["optional-dependencies"][extra]
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--python", default="python3.12", help="interpreter of the image's Python version")
    p.add_argument("--upgrade", action="store_true", help="resolve afresh instead of keeping the pins")
    p.add_argument("-o", "--output", type=Path, default=LOCK)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        env = Path(tmp) / "venv"
        subprocess.run([args.python, "-m", "venv", str(env)], check=True)
        py = str(env / "bin" / "python")
        minor = subprocess.run([py, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                               check=True, capture_output=True, text=True).stdout.strip()
        reqs = Path(tmp) / "requirements.txt"
        reqs.write_text("\n".join(requirements()) + "\n")
        keep = ["-c", str(args.output)] if args.output.exists() and not args.upgrade else []
        subprocess.run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", *keep, "-r", str(reqs)],
                       check=True)
        # the package itself, to check that the pins satisfy it (pip check) before they are written
        src = Path(tmp) / "src"
        shutil.copytree(ROOT / "legalsat", src / "legalsat", ignore=shutil.ignore_patterns("__pycache__"))
        for name in ("pyproject.toml", "README.md"):
            shutil.copy(ROOT / name, src / name)
        subprocess.run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
                        "--no-build-isolation", str(src)], check=True)
        subprocess.run([py, "-m", "pip", "check"], check=True)
        frozen = subprocess.run([py, "-m", "pip", "freeze", "--all", "--exclude", "legalsat", "--exclude", "pip"],
                                check=True, capture_output=True, text=True).stdout
    pins = sorted((line for line in frozen.splitlines() if "==" in line), key=str.lower)
    args.output.write_text(HEADER.format(minor=minor) + "\n".join(pins) + "\n")
    print(f"{args.output}: {len(pins)} pins for Python {minor}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
