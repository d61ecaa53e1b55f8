"""Defaults that depend on where the service runs: the CPUs (affinity mask, cgroup v2 quota)
and memory (cgroup memory.max) a process may use, read from a fake cgroup tree."""

from __future__ import annotations

import os

import pytest

from legalsat import settings as settings_module
from legalsat.settings import cgroup_limits, get_settings, usable_cpus


def cgroup(tmp_path, own: str = "/", files: dict[str, str] | None = None):
    """A fake /sys/fs/cgroup and /proc/self/cgroup: files maps "dir/cpu.max" -> content."""
    root = tmp_path / "cgroup"
    root.mkdir()
    for rel, text in (files or {}).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")
    (root / own.strip("/")).mkdir(parents=True, exist_ok=True)
    proc = tmp_path / "proc-self-cgroup"
    proc.write_text(f"0::{own}\n")
    return str(root), str(proc)


@pytest.fixture
def eight_cpus(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)))


@pytest.mark.parametrize(("cpu_max", "cpus"), [
    ("max 100000", 8),          # no quota: the affinity mask
    ("200000 100000", 2),       # docker --cpus=2
    ("150000 100000", 2),       # 1.5 CPUs: rounded up
    ("50000 100000", 1),        # half a CPU: at least one
    ("1600000 100000", 8),      # a quota above the mask: the mask
])
def test_cpus_are_the_affinity_mask_capped_by_the_cgroup_quota(tmp_path, eight_cpus, cpu_max, cpus):
    root, proc = cgroup(tmp_path, files={"cpu.max": cpu_max})
    assert usable_cpus(root, proc) == cpus


def test_a_limit_anywhere_above_the_process_cgroup_applies(tmp_path, eight_cpus):
    root, proc = cgroup(tmp_path, "/kubepods/pod1/ctr", {
        "kubepods/cpu.max": "max 100000", "kubepods/pod1/cpu.max": "300000 100000",
        "kubepods/pod1/ctr/cpu.max": "max 100000", "kubepods/pod1/memory.max": str(6 << 30),
        "kubepods/memory.max": str(8 << 30)})
    assert usable_cpus(root, proc) == 3
    assert cgroup_limits(root, proc) == (3, 6 << 30)


def test_no_cgroup_v2_means_no_limit(tmp_path, eight_cpus):
    assert cgroup_limits(str(tmp_path / "absent"), str(tmp_path / "absent-proc")) == (None, None)
    assert usable_cpus(str(tmp_path / "absent"), str(tmp_path / "absent-proc")) == 8
    root, proc = cgroup(tmp_path, files={"cpu.max": "garbage", "memory.max": "max"})
    assert cgroup_limits(root, proc) == (None, None)


def test_workers_and_worker_memory_default_to_what_the_process_may_use(tmp_path, monkeypatch, eight_cpus):
    root, proc = cgroup(tmp_path, files={"cpu.max": "200000 100000", "memory.max": str(4 << 30)})
    monkeypatch.setattr(settings_module, "CGROUP_ROOT", root)
    monkeypatch.setattr(settings_module, "PROC_CGROUP", proc)
    for var in ("LEGALSAT_WORKERS", "LEGALSAT_WORKER_MEMORY_MB"):
        monkeypatch.delenv(var, raising=False)
    s = get_settings()
    assert s.workers == 2
    assert s.worker_memory_mb == min(4096, os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") >> 20) * 3 // 4 // 2




def test_the_readme_lists_every_setting():
    """LEGALSAT_HEAD_TIMEOUT_S was missing from the README's list of settings."""
    from pathlib import Path

    from legalsat.settings import Settings

    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    listed = text[text.index("**Settings**"):]
    missing = [f"LEGALSAT_{name.upper()}" for name in Settings.model_fields
               if f"`LEGALSAT_{name.upper()}`" not in listed]
    assert not missing, missing


def test_an_allowed_host_with_a_port_is_refused_where_it_is_set():
    """LEGALSAT_ALLOWED_HOSTS='["127.0.0.1:8000"]' was accepted and then refused every request,
    /healthz included (the Host is compared without its port): it is refused when read, with
    the entry to write instead."""
    import pytest
    from pydantic import ValidationError

    from legalsat.settings import Settings

    with pytest.raises(ValidationError) as e:
        Settings(allowed_hosts=["localhost", "127.0.0.1:18731"])
    assert "'127.0.0.1'" in str(e.value) and "port" in str(e.value)
    assert Settings(allowed_hosts=["localhost", "*.example.com"]).allowed_hosts == ["localhost", "*.example.com"]


@pytest.mark.parametrize("name, value, said", [
    ("token", "", "token is empty"), ("token", "  ", "token is empty"),  # compare_digest("", "") let requests in
    ("host", "", "every interface"),  # uvicorn listened on 0.0.0.0
    ("allowed_hosts", [], "list is empty"),  # every request was refused bad_host, /healthz too
])
def test_settings_that_would_open_or_close_the_service_unasked_are_refused(name, value, said):
    from pydantic import ValidationError

    from legalsat.settings import Settings

    with pytest.raises(ValidationError) as e:
        Settings(**{name: value})
    assert said in str(e.value)
