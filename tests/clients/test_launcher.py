"""The Triton client's launch path: a kernel compiled once is launched directly while its
arguments specialize the same way, and through Triton's JIT otherwise."""

from __future__ import annotations

import pytest

# torch and triton are imported by the tests, not at collection: triton decides once, when it
# is first imported, whether its language runs in the interpreter (tests/kernels/conftest.py
# sets TRITON_INTERPRET for the kernel tests)


class FakeCompiled:
    """What Triton's JIT returns: a compiled kernel with its launcher."""

    def __init__(self):
        self.function, self.packed_metadata, self.runs = object(), object(), []

    def launch_metadata(self, grid, stream, *args):
        return None

    def run(self, gx, gy, gz, stream, function, packed, launch_metadata, enter, exit_, *args):
        assert function is self.function and packed is self.packed_metadata
        self.runs.append((gx, args))


class FakeJit:
    def __init__(self):
        self.jit_calls = 0
        self.compiled: list[FakeCompiled] = []

    def __getitem__(self, grid):
        def launch(*args, num_warps):
            self.jit_calls += 1
            ck = FakeCompiled()
            self.compiled.append(ck)
            return ck
        return launch


@pytest.fixture
def client():
    from tests.kernels.client import require_client

    require_client()


@pytest.fixture
def on_gpu(monkeypatch, client):
    """As on a GPU: no interpreter, a current stream."""
    import torch

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda: type("S", (), {"cuda_stream": 7})())


def test_second_launch_skips_the_jit(on_gpu):
    import torch

    from legalsat.clients.triton import Launcher

    fn = FakeJit()
    launch = Launcher(fn, 4)
    a = torch.empty(64, dtype=torch.uint8)
    b = torch.empty(64, dtype=torch.uint8)
    launch(3, [a, b])
    launch(3, [a, b])
    launch(5, [b, a])
    assert fn.jit_calls == 1
    assert [g for g, _ in fn.compiled[0].runs] == [3, 5]


def test_an_argument_that_specializes_differently_goes_through_the_jit(on_gpu):
    """A pointer off 16 bytes was compiled for differently: never launched on the aligned
    kernel (nor the reverse)."""
    import torch

    from legalsat.clients.triton import Launcher

    fn = FakeJit()
    launch = Launcher(fn, 4)
    buf = torch.empty(64, dtype=torch.uint8)
    aligned, off = buf[:32], buf[1:33]
    assert aligned.data_ptr() % 16 == 0 and off.data_ptr() % 16
    launch(1, [aligned])
    launch(1, [off])
    launch(1, [off])
    launch(1, [aligned])
    assert fn.jit_calls == 2
    assert len(fn.compiled[0].runs) == 1 and len(fn.compiled[1].runs) == 1


def test_interpreter_always_uses_the_jit(monkeypatch, client):
    import torch

    from legalsat.clients.triton import Launcher

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    fn = FakeJit()
    launch = Launcher(fn, 4)
    a = torch.empty(16, dtype=torch.uint8)
    launch(1, [a])
    launch(1, [a])
    assert fn.jit_calls == 2 and not fn.compiled[0].runs
