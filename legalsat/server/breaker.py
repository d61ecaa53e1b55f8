"""A circuit breaker for a dependency the service can do without (the shared plan cache).

    closed --(`failures` failed calls in a row)--> open --(`reset_s` later)--> half_open
    half_open --(its one trial call succeeds)--> closed
    half_open --(the trial fails)--> open (for another `reset_s`)

While open, `allow()` says no at once: the caller skips the dependency (a cache miss, a write
not made) instead of waiting for a timeout. In half_open exactly one caller is let through as
the trial; the others are still refused until it reports. Thread-safe; the clock is
injectable so that the transitions can be tested without sleeping.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

CLOSED, OPEN, HALF_OPEN = "closed", "open", "half_open"


class CircuitBreaker:
    def __init__(self, failures: int = 3, reset_s: float = 5.0, clock: Callable[[], float] = time.monotonic,
                 on_change: Callable[[str, str], None] | None = None):
        if failures < 1 or reset_s <= 0:
            raise ValueError("a breaker needs failures >= 1 and reset_s > 0")
        self.failures = failures
        self.reset_s = reset_s
        self._clock = clock
        self._on_change = on_change
        self._lock = threading.Lock()
        self._state = CLOSED
        self._failed = 0  # failed calls in a row while closed
        self._opened_at = 0.0
        self._trial = False  # half_open: the trial call is out

    @property
    def state(self) -> str:
        """closed, open or half_open (an open breaker past its reset time reads half_open)."""
        with self._lock:
            if self._state == OPEN and self._clock() - self._opened_at >= self.reset_s:
                return HALF_OPEN
            return self._state

    def allow(self) -> bool:
        """May a call go to the dependency now? Every True must be followed by `record`."""
        with self._lock:
            if self._state == CLOSED:
                return True
            if self._state == OPEN:
                if self._clock() - self._opened_at < self.reset_s:
                    return False
                change = self._set(HALF_OPEN)
            else:
                change = None
            if self._trial:
                allowed = False
            else:
                self._trial = allowed = True
        self._notify(change)
        return allowed

    def record(self, ok: bool) -> None:
        """The outcome of a call that `allow` let through."""
        with self._lock:
            change = None
            if self._state == HALF_OPEN:
                self._trial = False
                if ok:
                    self._failed = 0
                    change = self._set(CLOSED)
                else:
                    self._opened_at = self._clock()
                    change = self._set(OPEN)
            elif ok:
                self._failed = 0
            else:
                self._failed += 1
                if self._state == CLOSED and self._failed >= self.failures:
                    self._opened_at = self._clock()
                    change = self._set(OPEN)
        self._notify(change)

    def _set(self, state: str) -> tuple[str, str] | None:
        old, self._state = self._state, state
        return (old, state) if old != state else None

    def _notify(self, change: tuple[str, str] | None) -> None:
        if change is not None and self._on_change is not None:
            self._on_change(*change)
