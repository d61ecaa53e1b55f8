"""A real `legalsat serve` process on a loopback port, for tests, benchmarks and the Docker
smoke test: started with the given settings (as LEGALSAT_* variables), awaited until
/healthz answers, stopped with SIGTERM (graceful) or SIGKILL."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LiveServer:
    """`with LiveServer(workers=1, cache_path=...) as srv: httpx.get(srv.url + "/healthz")`"""

    def __init__(self, command: list[str] | None = None, env: dict[str, str] | None = None,
                 log_path: str | None = None, **settings: object):
        self.port = int(settings.pop("port", 0)) or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.command = command or [sys.executable, "-m", "legalsat.clients.cli", "serve"]
        self.env = {**os.environ, **(env or {}), "LEGALSAT_HOST": "127.0.0.1", "LEGALSAT_PORT": str(self.port)}
        for k, v in settings.items():
            self.env[f"LEGALSAT_{k.upper()}"] = str(v)
        self.log_path = log_path
        self.proc: subprocess.Popen | None = None
        self._log = None

    def start(self, timeout_s: float = 120.0) -> LiveServer:
        self._log = open(self.log_path, "ab") if self.log_path else None
        self.proc = subprocess.Popen(self.command, env=self.env, stdout=self._log or subprocess.DEVNULL, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"legalsat serve exited with {self.proc.returncode}"
                                   + (f"; see {self.log_path}" if self.log_path else ""))
            try:
                with urllib.request.urlopen(self.url + "/healthz", timeout=1) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.1)
        self.kill()
        raise RuntimeError(f"legalsat serve did not answer /healthz within {timeout_s} s")

    def descendants(self) -> list[int]:
        """Every process under the server (forkserver, workers), from /proc."""
        return descendants(self.proc.pid)

    def stop(self, timeout_s: float = 60.0) -> int:
        """SIGTERM (in-flight requests finish), then wait; returns the exit code."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
            return -9

    def kill(self) -> None:
        """SIGKILL the server and everything under it (as a crash would)."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def __enter__(self) -> LiveServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
        self.kill()
        if self._log is not None:
            self._log.close()


def descendants(pid: int) -> list[int]:
    """Every process under `pid` (children, theirs, ...), from /proc."""
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(d.name))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out
