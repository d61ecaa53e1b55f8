"""tools/ptx_hint_probe.py rewrites the PTX of renamed kernels only: each variant's global
loads carry its qualifiers, ptxas takes them, shared-memory and parameter loads keep theirs,
and a kernel not renamed compiles as emitted."""

from __future__ import annotations

import json

from tests.kernels.client import compiled_in_child, require_client
from tools.ptx_hint_probe import HINTS, qualified

PTX = ("\tld.param.b64 \t%rd1, [k_param_0];\n\t@%p1 ld.global.v2.b64 { %rd5, %rd6 }, [ %rd1 + 0 ];\n"
       "\tld.shared.v4.b32 { %r1, %r2, %r3, %r4 }, [ %r5 + 0 ];\n\tst.global.v2.b64 [ %rd7 + 0 ], { %rd5, %rd6 };\n")


def test_only_global_loads_take_the_qualifiers():
    out = qualified(PTX, ".nc.L2::256B").splitlines()
    assert out[1] == "\t@%p1 ld.global.nc.L2::256B.v2.b64 { %rd5, %rd6 }, [ %rd1 + 0 ];"
    assert [out[0], *out[2:]] == [PTX.splitlines()[0], *PTX.splitlines()[2:]]


_COMPILE = """
import json, re, sys
from legalsat.clients.resources import compile_kernel
import dataclasses
from legalsat.kernels import emit
from legalsat.kernels.source import without_data_load_hint
from tools.ptx_hint_probe import HINTS, install_hook, renamed
from tools.sweep import planned

install_hook()
em = emit(planned()[sys.argv[1]]["response"]["plans"][0])
em = dataclasses.replace(em, source=without_data_load_hint(em.source))  # the probe's base (main: unhinted)
out = {}
for tag in ["", *HINTS]:
    v = renamed(em, tag) if tag else em
    k = compile_kernel(v, v.launches[0], aligned=True)
    out[tag] = sorted(set(re.findall(r"ld\\.global[\\w.:]*", k.asm["ptx"])))
print(json.dumps(out))
"""


def test_each_variant_compiles_with_its_own_loads():
    require_client()
    loads = json.loads(compiled_in_child(_COMPILE, "BSHD→BHSD 8×32×4096×128 bf16").splitlines()[-1])
    assert loads[""] == ["ld.global.v2.b64"]
    for tag, q in HINTS.items():
        assert loads[tag] == [f"ld.global{q}.v2.b64"], (tag, loads[tag])
