"""The package's layers import one way: data <- models <- planner <- schemas <- api <- server /
clients, the kernels depend on the term language and the plan schema only, the core never
imports FastAPI, and only the command line and the service read the settings."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "legalsat"

# subpackage (or module) -> layer; a module may import its own layer and the ones below
LAYERS = {
    "diagnostics": 0, "terms": 0,
    "targets": 1,
    "analyses": 2, "protocols": 2,
    "planner": 3,
    "schemas": 4,
    "api": 5, "kernels": 5,
    "settings": 6, "server": 6, "clients": 6,
    "testing": 7,
}
# narrower than the layers allow
ONLY = {
    "kernels": {"diagnostics", "terms", "schemas", "kernels"},
    "settings": {"settings"},
}
SETTINGS_READERS = {"settings", "server", "clients", "testing"}
CORE = [name for name, layer in LAYERS.items() if layer <= 5]


def unit(module: str) -> str | None:
    """The LAYERS key of a legalsat module name ("legalsat.planner.solve" -> "planner")."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "legalsat" else None


def imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import in the file, wherever it is (lazy imports count)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out += [(node.lineno, node.module)]
            out += [(node.lineno, f"{node.module}.{a.name}") for a in node.names if node.module == "legalsat"]
    return out


FILES = sorted(p for p in PACKAGE.rglob("*.py") if p.name != "__init__.py" or p.parent != PACKAGE)


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(PACKAGE)) for p in FILES])
def test_imports_point_down(path):
    rel = path.relative_to(PACKAGE).with_suffix("")
    own = rel.parts[0]
    assert own in LAYERS, f"{rel}: a new top-level module must be given a layer here"
    bad = []
    for line, module in imports(path):
        if module.split(".")[0] in ("fastapi", "starlette", "uvicorn") and own in CORE:
            bad.append(f"line {line}: the core imports {module}")
        other = unit(module)
        if other is None or other == own:
            continue
        if other not in LAYERS:
            continue  # a name imported from the package root (e.g. legalsat.__version__)
        if LAYERS[other] > LAYERS[own] or (own in ONLY and other not in ONLY[own]):
            bad.append(f"line {line}: {own} imports {module} (layer {LAYERS[other]} > {LAYERS[own]})")
        if other == "settings" and own not in SETTINGS_READERS:
            bad.append(f"line {line}: {own} reads the settings (only the command line and the service may)")
    assert not bad, f"{rel}:\n" + "\n".join(bad)


def _loaded(statement: str) -> list[str]:
    code = f"import sys, json; {statement}; print(json.dumps(sorted(sys.modules)))"
    return json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)


def test_kernels_load_nothing_of_the_planner():
    """`legalsat emit` and the Triton client run where egglog, z3 and islpy are not wanted."""
    loaded = _loaded("import legalsat.kernels")
    assert not [m for m in loaded if m.startswith("legalsat.planner") or m.split(".")[0] in ("egglog", "z3", "islpy")]


def test_the_planner_package_loads_no_solver_until_asked():
    loaded = _loaded("import legalsat.planner.plan, legalsat.planner.request")
    assert not [m for m in loaded if m.split(".")[0] in ("egglog", "z3", "islpy", "fastapi")]
