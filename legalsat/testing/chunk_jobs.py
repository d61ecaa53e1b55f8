"""Chunk jobs for tests of the streaming machinery (legalsat.clients.jsonl.run_stream and the
Ray executor): module-level, so worker processes and Ray actors can receive them."""

from __future__ import annotations

import os
import time


def echo(first: int, lines: list[bytes]) -> bytes:
    """Each line's number as a JSON object."""
    return b"".join(b'{"line":%d}\n' % (first + k) for k in range(len(lines)))


def sleeping(seconds: float, first: int, lines: list[bytes]) -> bytes:
    """`echo`, after `seconds` a chunk."""
    time.sleep(seconds)
    return echo(first, lines)


def dying(marker_dir: str, first: int, lines: list[bytes]) -> bytes:
    """`echo`, except that a line holding b"die" ends its worker process (as the OOM killer
    or a native crash does), and a line holding b"once" does so on its first run only
    (`marker_dir` remembers it)."""
    for line in lines:
        if b"die" in line:
            os._exit(1)
        if b"once" in line:
            marker = os.path.join(marker_dir, f"once-{first}")
            if not os.path.exists(marker):
                open(marker, "w").close()
                os._exit(1)
    return echo(first, lines)
