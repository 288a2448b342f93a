"""The one definition of an optimality gap used across the package."""

from __future__ import annotations

import math

#: Absolute tolerance under which objective and bound count as equal.
GAP_ABS_TOL = 1e-9


def gap(value: float | None, bound: float | None) -> float | None:
    """Relative optimality gap of a minimization objective against a lower bound.

    ``gap = (value - bound) / max(|value|, |bound|)``, so that the gap lies in
    [0, 1] when both numbers are non-negative, is 0 for a proven optimum and does
    not blow up near zero. Every table, report and test uses this function.

    Parameters
    ----------
    value
        Objective of a solution (as computed by the family's evaluator).
    bound
        Proven lower bound on the optimum (or the best objective of another
        method, to compare a heuristic against an optimum).

    Returns
    -------
    float or None
        ``None`` when either number is missing or not finite. A negative value
        means ``value`` lies below ``bound``: when ``bound`` is proven, that is a
        bug in the method that produced ``value`` or in the one that produced
        ``bound``.

    Examples
    --------
    >>> gap(110.0, 100.0)
    0.09090909090909091
    >>> gap(100.0, 100.0)
    0.0
    >>> gap(5.0, None) is None
    True
    """
    if value is None or bound is None:
        return None
    value, bound = float(value), float(bound)
    if not (math.isfinite(value) and math.isfinite(bound)):
        return None
    diff = value - bound
    if abs(diff) <= GAP_ABS_TOL:
        return 0.0
    scale = max(abs(value), abs(bound))
    return diff / scale
