"""A real `redis-server` on a loopback port, in a directory of its own, configured as the
shared plan cache should be run (maxmemory with allkeys-lru, no persistence): started,
killed (SIGKILL, as an outage), paused (SIGSTOP: it accepts but never answers) and started
again on the same port."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time

from legalsat.testing.live_server import free_port


class RedisServer:
    """`with RedisServer(exe, tmp_path) as r: r.url`"""

    def __init__(self, exe: str, directory: str, port: int = 0, maxmemory: str = "64mb"):
        self.exe = exe
        self.dir = directory
        self.port = port or free_port()
        self.maxmemory = maxmemory
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen | None = None

    def start(self, timeout_s: float = 30.0) -> RedisServer:
        args = [self.exe, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", self.dir,
                "--save", "", "--appendonly", "no", "--maxmemory", self.maxmemory,
                "--maxmemory-policy", "allkeys-lru", "--daemonize", "no"]
        log = open(os.path.join(self.dir, f"redis-{self.port}.log"), "ab")
        self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self.proc.returncode}; see {self.dir}")
            if self.ping():
                return self
            time.sleep(0.05)
        self.kill()
        raise RuntimeError(f"redis-server did not answer within {timeout_s} s")

    def ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                s.sendall(b"PING\r\n")
                return s.recv(64).startswith(b"+PONG")
        except OSError:
            return False

    def kill(self) -> None:
        """SIGKILL (an outage: its data is gone)."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGCONT)  # a paused server dies too
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def pause(self) -> None:
        """SIGSTOP: connections are accepted by the kernel but never answered."""
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self.proc.pid, signal.SIGCONT)

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.kill()
