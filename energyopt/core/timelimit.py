"""A method's wall-clock budget, measured from its start (one definition for every family)."""

from __future__ import annotations

import time

#: The least time handed to a solver: HiGHS and CP-SAT need a moment to return their
#: incumbent and bound even when the budget is spent.
MIN_SOLVER_S = 0.05


class TimeBudget:
    """``time_limit`` seconds (``None``: no limit) from the moment of construction.

    Examples
    --------
    >>> budget = TimeBudget(None)
    >>> budget.remaining() is None
    True
    """

    def __init__(self, time_limit: float | None, *, start: float | None = None) -> None:
        self.time_limit = None if time_limit is None else float(time_limit)
        self.start = time.perf_counter() if start is None else start

    @property
    def stop_at(self) -> float | None:
        """The ``time.perf_counter()`` value at which the budget is spent."""
        return None if self.time_limit is None else self.start + self.time_limit

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def remaining(self, floor: float = MIN_SOLVER_S) -> float | None:
        """Seconds left, at least ``floor`` (``None`` without a limit)."""
        if self.time_limit is None:
            return None
        return max(floor, self.time_limit - self.elapsed())

    def expired(self) -> bool:
        return self.time_limit is not None and self.elapsed() >= self.time_limit


def remaining_time(
    time_limit: float | None, start: float, floor: float = MIN_SOLVER_S
) -> float | None:
    """Seconds left of ``time_limit`` counted from ``start`` (``time.perf_counter()``),
    at least ``floor``; ``None`` without a limit."""
    return TimeBudget(time_limit, start=start).remaining(floor)
