"""The shared cache's circuit breaker, on a fake clock (no sleeping)."""

from __future__ import annotations

import threading

import pytest

from legalsat.server.breaker import CLOSED, HALF_OPEN, OPEN, CircuitBreaker


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def breaker(**kw):
    clock, changes = Clock(), []
    b = CircuitBreaker(failures=3, reset_s=5.0, clock=clock, on_change=lambda old, new: changes.append((old, new)),
                       **kw)
    return b, clock, changes


def fail(b: CircuitBreaker, n: int = 1) -> None:
    for _ in range(n):
        ticket = b.allow()
        assert ticket
        b.record(False, ticket)


def test_opens_after_consecutive_failures_only():
    b, _, changes = breaker()
    fail(b, 2)
    b.record(True, b.allow())  # a success in between starts the count again
    fail(b, 2)
    assert b.state == CLOSED and changes == []
    fail(b)
    assert b.state == OPEN and changes == [(CLOSED, OPEN)]
    assert not b.allow() and not b.allow()  # skipped at once while open


def test_half_open_lets_one_trial_through_and_closes_on_success():
    b, clock, changes = breaker()
    fail(b, 3)
    clock.t += 4.9
    assert not b.allow() and b.state == OPEN
    clock.t += 0.2
    assert b.state == HALF_OPEN
    trial = b.allow()
    assert trial
    assert not b.allow() and not b.allow()  # the others wait for its outcome
    b.record(True, trial)
    assert b.state == CLOSED and b.allow()
    assert changes == [(CLOSED, OPEN), (OPEN, HALF_OPEN), (HALF_OPEN, CLOSED)]


def test_a_failed_trial_reopens_for_another_period():
    b, clock, changes = breaker()
    fail(b, 3)
    clock.t += 5
    fail(b)  # the trial fails
    assert b.state == OPEN and changes[-1] == (HALF_OPEN, OPEN)
    clock.t += 4.9
    assert not b.allow()  # the period starts again from the failed trial
    clock.t += 0.1
    assert b.allow()


def test_closed_again_needs_all_failures_again():
    b, clock, _ = breaker()
    fail(b, 3)
    clock.t += 5
    b.record(True, b.allow())
    fail(b, 2)
    assert b.state == CLOSED


def test_concurrent_callers_get_one_trial():
    b, clock, _ = breaker()
    fail(b, 3)
    clock.t += 5
    allowed = []
    threads = [threading.Thread(target=lambda: allowed.append(b.allow())) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len([t for t in allowed if t]) == 1


def test_a_call_let_through_before_the_breaker_opened_does_not_decide_the_trial():
    """A slow call, let through while closed, failing after the breaker opened and a trial
    succeeded, left the breaker open with no trial out (every later call refused for good)."""
    b, clock, _ = breaker()
    slow = b.allow()
    fail(b, 3)
    clock.t += 5
    trial = b.allow()
    b.record(False, slow)  # the slow call reports late
    assert b.state == HALF_OPEN and not b.allow()  # the trial is still out and decides
    b.record(True, trial)
    assert b.state == CLOSED and b.allow()
    late = b.allow()
    fail(b, 3)
    clock.t += 5
    b.record(True, b.allow())
    b.record(False, late)  # from before the last open: counts for nothing
    fail(b, 2)
    assert b.state == CLOSED


def test_calls_given_up_from_outside_count_as_failures_while_closed():
    b, clock, _ = breaker()
    for _ in range(3):
        b.failed_outside()
    assert b.state == OPEN
    clock.t += 5
    trial = b.allow()
    b.failed_outside()  # an overdue call in half_open: the trial decides
    assert b.state == HALF_OPEN
    b.record(True, trial)
    assert b.state == CLOSED


def test_rejects_nonsense_parameters():
    with pytest.raises(ValueError):
        CircuitBreaker(failures=0)
    with pytest.raises(ValueError):
        CircuitBreaker(reset_s=0)
