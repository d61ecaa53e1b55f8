"""A circuit breaker for a dependency the service can do without (the shared plan cache).

    closed --(`failures` failed calls in a row)--> open --(`reset_s` later)--> half_open
    half_open --(its one trial call succeeds)--> closed
    half_open --(the trial fails)--> open (for another `reset_s`)

While open, `allow()` says no at once: the caller skips the dependency (a cache miss, a write
not made) instead of waiting for a timeout. In half_open exactly one caller is let through as
the trial; the others are still refused until it reports. `allow()` hands out a ticket that
its `record` returns: only the trial's ticket decides half_open (a call let through before
the breaker opened, reporting late, does not), and a call that reports after the breaker
opened counts for nothing. Thread-safe; the clock is injectable so that the transitions can be
tested without sleeping.
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
        self._trial = 0  # half_open: the ticket of the trial call that is out (0: none)
        self._tickets = 0  # tickets handed out; those up to _opened_ticket were let through before the last open
        self._opened_ticket = 0

    @property
    def state(self) -> str:
        """closed, open or half_open (an open breaker past its reset time reads half_open)."""
        with self._lock:
            if self._state == OPEN and self._clock() - self._opened_at >= self.reset_s:
                return HALF_OPEN
            return self._state

    def allow(self) -> int:
        """May a call go to the dependency now? 0 if not, else a ticket (truthy) that must be
        passed to `record` with the call's outcome."""
        with self._lock:
            if self._state == CLOSED:
                return self._ticket()
            if self._state == OPEN:
                if self._clock() - self._opened_at < self.reset_s:
                    return 0
                change = self._set(HALF_OPEN)
            else:
                change = None
            ticket = 0
            if not self._trial:
                ticket = self._trial = self._ticket()
        self._notify(change)
        return ticket

    def _ticket(self) -> int:
        self._tickets += 1
        return self._tickets

    def record(self, ok: bool, ticket: int) -> None:
        """The outcome of the call `allow` gave `ticket`."""
        with self._lock:
            change = None
            if self._state == HALF_OPEN:
                if ticket != self._trial:  # let through before the breaker opened: the trial decides
                    return
                self._trial = 0
                change = self._open() if not ok else self._set(CLOSED)
                self._failed = 0
            elif self._state == CLOSED and ticket > self._opened_ticket:
                self._failed = 0 if ok else self._failed + 1
                if self._failed >= self.failures:
                    change = self._open()
        self._notify(change)

    def failed_outside(self) -> None:
        """A call that its caller gave up on (overdue before or while it ran): one more
        failure in a row while closed; in half_open the trial's own outcome decides."""
        with self._lock:
            change = None
            if self._state == CLOSED:
                self._failed += 1
                if self._failed >= self.failures:
                    change = self._open()
        self._notify(change)

    def _open(self) -> tuple[str, str] | None:
        self._opened_at = self._clock()
        self._opened_ticket = self._tickets
        return self._set(OPEN)

    def _set(self, state: str) -> tuple[str, str] | None:
        old, self._state = self._state, state
        return (old, state) if old != state else None

    def _notify(self, change: tuple[str, str] | None) -> None:
        if change is not None and self._on_change is not None:
            self._on_change(*change)
