"""Continuous cost models of one computation for the frontier crawl (Perseus 4.1, App. D).

The crawl works on *effective* energy ``e - P_blocking * t`` (Perseus Eq. 4) as a
function of the planned duration, in integer units of ``tau``. Two models:

- ``"hull"``: the piecewise-linear lower convex hull of the Pareto-optimal
  measured options. No fitting error: at a measured option's time the model is
  exact whenever that option is on the hull, and it is convex, so the min-cut
  step of Perseus Appendix E is exactly the Phillips-Dessouky step.
- ``"exponential"``: the paper's fit ``a * exp(b * t) + c`` (Appendix D) to the
  same points, by least squares.

Each model is tabulated once per option table on the integer grid
``d_min .. d_max`` with ``d_min = ceil(t_fastest / tau)`` and
``d_max = ceil(t_least_energy / tau)``, so that every planned duration can be
met by some measured option (the clock conversion of Perseus 4.3 picks the
slowest option that is not slower than the plan).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import warnings
from collections.abc import Iterator

import numpy as np

from energyopt.core.instance import InstanceError
from energyopt.pipeline.options import OptionTable

COST_MODELS = ("hull", "exponential")


@dataclasses.dataclass(frozen=True)
class TabulatedCost:
    """One option table's cost model on the integer duration grid.

    Attributes
    ----------
    d_min, d_max
        Shortest and longest planned duration in units of tau.
    cost_j
        Modelled effective energy at ``d_min .. d_max`` (length ``d_max - d_min + 1``).
    option_at
        Option index (into the original table) realising each planned duration:
        the slowest Pareto-optimal option whose measured time fits.
    model
        ``"hull"`` or ``"exponential"``; ``fit`` holds ``(a, b, c)`` of the latter
        with t in seconds.
    """

    d_min: int
    d_max: int
    cost_j: np.ndarray
    option_at: np.ndarray
    model: str
    fit: tuple[float, ...] = ()

    def speedup_cost(self) -> np.ndarray:
        """``e(d - 1) - e(d)`` for each grid duration (``inf`` at ``d_min``)."""
        out = np.full(len(self.cost_j), math.inf)
        out[1:] = self.cost_j[:-1] - self.cost_j[1:]
        return out

    def slowdown_saving(self) -> np.ndarray:
        """``e(d) - e(d + 1)`` for each grid duration (0 at ``d_max``)."""
        out = np.zeros(len(self.cost_j))
        out[:-1] = self.cost_j[:-1] - self.cost_j[1:]
        return out


def pareto_points(
    table: OptionTable, p_blocking_w: float, where: str = "table"
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pareto-optimal ``(time_s, effective energy_j, option index)``, fastest first."""
    keep, _ = table.pareto(p_blocking_w)
    idx = np.asarray(keep, dtype=np.int64)
    t = np.asarray(table.time_s, dtype=float)[idx]
    e = np.asarray(table.energy_j, dtype=float)[idx] - p_blocking_w * t
    if np.any(t <= 0):
        raise InstanceError(f"{where}.time_s: a Pareto-optimal option takes 0 s; cannot plan it")
    return t, e, idx


def lower_convex_hull(t: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Indices of the vertices of the lower convex hull of points sorted by ``t``."""
    hull: list[int] = []
    for k in range(len(t)):
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            # Drop b when it lies on or above the chord a -> k.
            if (e[b] - e[a]) * (t[k] - t[a]) >= (e[k] - e[a]) * (t[b] - t[a]):
                hull.pop()
            else:
                break
        hull.append(k)
    return np.asarray(hull, dtype=np.int64)


#: Fits remembered by their points while :func:`remembered_fits` is open (else ``None``).
_FITS: dict[tuple[bytes, bytes], tuple[float, float, float]] | None = None


@contextlib.contextmanager
def remembered_fits() -> Iterator[None]:
    """Within the block, :func:`fit_exponential` fits each set of points once.

    The default crawl's two repairs fit the same tables (a tenth of its time on
    synthetic 8 x 16). The memory ends with the block, so one solve never reuses
    another's fits (timings stay those of a first call). A fit is a function of its
    points, so sharing can change no result.
    """
    global _FITS
    outer = _FITS
    _FITS = {} if outer is None else outer
    try:
        yield
    finally:
        _FITS = outer


def fit_exponential(t: np.ndarray, e: np.ndarray) -> tuple[float, float, float]:
    """Least-squares ``a * exp(b * t) + c`` through the points (Perseus Appendix D).

    Times are normalised by the fastest time for conditioning. With fewer than
    three points the fit is the straight line through them (``b -> 0`` limit),
    expressed with a tiny ``b``. Inside :func:`remembered_fits` each set of points
    is fitted once.
    """
    memo = _FITS
    if memo is None:
        return _fit_exponential(t, e)
    key = (np.asarray(t, dtype=float).tobytes(), np.asarray(e, dtype=float).tobytes())
    if key not in memo:
        memo[key] = _fit_exponential(t, e)
    return memo[key]


def _fit_exponential(t: np.ndarray, e: np.ndarray) -> tuple[float, float, float]:
    """The fit of :func:`fit_exponential`, computed."""
    # A zero-time fastest option (allowed) cannot scale: use the slowest time, or 1 s.
    t0 = float(t[0]) if t[0] > 0 else max(float(t[-1]), 1.0)
    x = t / t0
    if len(t) < 3:
        slope = 0.0 if len(t) < 2 else (e[1] - e[0]) / (x[1] - x[0])
        b = -1e-6
        a = -slope / b * math.exp(-b * x[0]) if slope else 0.0
        c = e[0] - a * math.exp(b * x[0])
        return a, b / t0, c
    best, best_err = None, math.inf
    span = max(float(e[0] - e[-1]), 1e-12)
    # Non-finite points fail every fit (as SciPy's curve_fit refuses them).
    finite = bool(np.isfinite(x).all() and np.isfinite(e).all())
    for b0 in (-1.0, -3.0, -10.0, -30.0) if finite else ():
        a0 = span / max(math.exp(b0 * x[0]) - math.exp(b0 * x[-1]), 1e-300)
        p0 = (a0, b0, float(e[-1]) - a0 * math.exp(b0 * x[-1]))
        p = _least_squares_fit(x, np.asarray(e, dtype=float), p0)
        if p is None:
            continue
        err = float(np.mean((p[0] * np.exp(p[1] * x) + p[2] - e) ** 2))
        if np.all(np.isfinite(p)) and err < best_err:
            best, best_err = p, err
    if best is None:
        raise InstanceError("exponential fit failed on every initial guess")
    return float(best[0]), float(best[1]) / t0, float(best[2])


def _least_squares_fit(x: np.ndarray, e: np.ndarray, p0: tuple) -> np.ndarray | None:
    """SciPy's ``curve_fit(lambda x, a, b, c: a * exp(b * x) + c, x, e, p0, maxfev=20000)``.

    ``curve_fit`` hands MINPACK's ``lmdif`` (through ``leastsq``) the residuals
    ``f(x, *p) - e`` and nothing else; calling ``leastsq`` with the same residuals,
    computed in the same order, gives the same parameters without its wrappers
    (the fit ran 13,000 residuals on the GPT-3 tables). ``None`` where
    ``curve_fit`` raises: no solution found, or a failing evaluation.
    """
    from scipy.optimize import leastsq

    def residuals(p: np.ndarray) -> np.ndarray:
        a, b, c = p
        return a * np.exp(b * x) + c - e

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            p, _, _, _, ier = leastsq(residuals, np.atleast_1d(p0), full_output=True, maxfev=20000)
    except (RuntimeError, ValueError, OverflowError):
        return None
    return p if ier in (1, 2, 3, 4) else None


def tabulate(
    table: OptionTable,
    p_blocking_w: float,
    tau_s: float,
    model: str = "hull",
    where: str = "table",
    rounding: str = "up",
) -> TabulatedCost:
    """The cost model of ``table`` on the integer grid of ``tau_s`` (see module doc).

    ``rounding="up"`` (default, Perseus 4.3): grid durations are measured times
    rounded up, and a plan runs the slowest option whose measured time fits, so
    measured times never exceed planned ones. ``"down"`` (what ``lowtime``
    does): option times are rounded down to the grid (of options sharing a grid
    time the fastest is kept) and a plan runs the slowest option whose rounded
    time fits, so a measured time can exceed its plan by less than tau.
    """
    if model not in COST_MODELS:
        raise ValueError(f"cost_model = {model!r}: expected one of {', '.join(COST_MODELS)}")
    if rounding not in ("up", "down"):
        raise ValueError(f"rounding = {rounding!r}: expected 'up' or 'down'")
    t, e, idx = pareto_points(table, p_blocking_w, where)
    # Pareto points come fastest first with strictly decreasing effective energy.
    if rounding == "down":
        q = np.floor(t / tau_s + 1e-9)
        first = np.concatenate([[True], q[1:] != q[:-1]])  # fastest of each grid time
        t, e, idx = q[first] * tau_s, e[first], idx[first]
        d_min = int(q[0])
        d_max = int(q[first][-1])
    else:
        d_min = math.ceil(t[0] / tau_s - 1e-9)
        d_max = max(d_min, math.ceil(t[-1] / tau_s - 1e-9))
    grid_s = np.arange(d_min, d_max + 1) * tau_s
    fit: tuple[float, ...] = ()
    if model == "hull" or len(t) == 1:
        h = lower_convex_hull(t, e)
        cost = np.interp(np.clip(grid_s, t[0], t[-1]), t[h], e[h])
    else:
        fit = fit_exponential(t, e)
        a, b, c = fit
        cost = a * np.exp(b * np.clip(grid_s, t[0], t[-1])) + c
    # Slowest Pareto option that is not slower than the plan (Perseus 4.3).
    pos = np.searchsorted(t, grid_s * (1 + 1e-12), side="right") - 1
    option_at = idx[np.clip(pos, 0, len(t) - 1)]
    return TabulatedCost(int(d_min), int(d_max), cost, option_at, model, fit)
