"""egglog's Rust bindings, the only part of egglog the planner uses.

`import egglog` runs the package's high-level API on the way (its Python DSL, and a code
formatter for pretty-printing), about 0.35 s of a fresh process's start; the planner needs
only the compiled `egglog.bindings` module. It is loaded on its own, under its own name, so
a later `import egglog` in the same process finds and reuses it (an extension module is
initialized once per process).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from pathlib import Path


def _load():
    if "egglog" in sys.modules or "egglog.bindings" in sys.modules:
        from egglog import bindings

        return bindings
    spec = importlib.util.find_spec("egglog")  # finds the package without running it
    folder = Path(next(iter(spec.submodule_search_locations)))
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    path = next(p for p in folder.iterdir() if p.name.startswith("bindings.") and p.name.endswith(suffixes))
    loader = importlib.machinery.ExtensionFileLoader("egglog.bindings", str(path))
    module = importlib.util.module_from_spec(importlib.util.spec_from_file_location("egglog.bindings", path,
                                                                                   loader=loader))
    sys.modules["egglog.bindings"] = module
    loader.exec_module(module)
    return module


bindings = _load()
