"""The least energy bound over all iteration times (Eq. PEM-R7) from the tangents' envelope.

``relaxation.least_energy_bound`` evaluates the bound at the breakpoints of the
tangents' upper envelope; the reference here is the earlier brute force, which
evaluated it at every pairwise crossing of the tangents.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import energyopt
from energyopt.core.instance import load_instance
from energyopt.core.status import TerminationReason
from energyopt.pipeline.exact.solve import best_free_deadline
from energyopt.pipeline.relaxation.hull import (
    BoundCurve,
    Tangent,
    curve_breakpoints,
    least_energy_bound,
    upper_envelope,
)
from tests.timing import assert_within, measured

PAPER = Path(__file__).resolve().parents[3] / "instances" / "pipeline" / "paper"
FREE_4X8 = PAPER / "004-synthetic-1f1b-4x8-k10-seed0.json"


def _pairwise_breakpoints(curve: BoundCurve) -> list[float]:
    """Every pairwise crossing in the range, and its ends (the earlier O(k^2) set)."""
    tg = curve.tangents
    lo, hi = curve.fastest_makespan_s, curve.cheapest_makespan_s
    points = {lo, hi}
    for a in range(len(tg)):
        for b in range(a + 1, len(tg)):
            if tg[a].slope != tg[b].slope:
                x = (tg[b].offset - tg[a].offset) / (tg[a].slope - tg[b].slope)
                if lo <= x <= hi:
                    points.add(x)
    return sorted(points)


def _brute_force_minimum(curve: BoundCurve) -> tuple[float, float]:
    """The earlier ``best_free_deadline`` on a curve: ``min((v, T))`` over every crossing
    (of the bound on a plan counted at its own makespan: no deadline, no tolerance)."""
    bound, T = min((_at(curve, T), T) for T in _pairwise_breakpoints(curve))
    return T, bound


def _at(curve: BoundCurve, makespan_s: float) -> float:
    return float(curve.makespan_bounds(np.array([makespan_s]))[0])


# Small integers make parallel and coincident tangents and exact ties likely; floats
# make crossings that rounding decides.
_number = st.one_of(
    st.integers(-6, 6).map(float),
    st.floats(-50.0, 50.0, allow_nan=False, allow_infinity=False),
)


@st.composite
def curves(draw) -> BoundCurve:
    lines = draw(st.lists(st.tuples(_number, _number), min_size=1, max_size=9))
    # Tangents through one point: crossings equal in exact arithmetic, not in floats.
    x0, y0 = draw(st.floats(0.1, 3.0)), draw(_number)
    for slope in draw(st.lists(_number, max_size=4)):
        lines.append((y0 - slope * x0, slope))
    lines += draw(st.lists(st.sampled_from(lines), max_size=3))  # coincident tangents
    lo = draw(st.floats(0.0, 2.0))
    hi = lo + draw(st.one_of(st.just(0.0), st.floats(1e-6, 3.0)))
    pbs = draw(st.one_of(st.integers(0, 6).map(float), st.floats(0.0, 40.0)))
    tangents = tuple(Tangent(lo, off, slope, off + slope * lo) for off, slope in lines)
    return BoundCurve(tangents, lo, hi, pbs, len(tangents), 0.0)


@st.composite
def kinks(draw) -> BoundCurve:
    """Tangents through one point, falling and rising: the minimum is that point, where
    their pairwise crossings differ by rounding only (a tie of exact arithmetic)."""
    x0, y0 = draw(st.floats(0.5, 2.5)), draw(st.floats(-50.0, 50.0))
    falling = draw(st.lists(st.floats(-40.0, -0.01), min_size=1, max_size=4))
    rising = draw(st.lists(st.floats(0.01, 40.0), min_size=1, max_size=4))
    below = draw(st.lists(st.tuples(_number, _number), max_size=3))
    lines = [(y0 - slope * x0, slope) for slope in falling + rising]
    lines += [(off - 200.0, slope) for off, slope in below]  # lower tangents cross too
    tangents = tuple(Tangent(0.0, off, slope, off) for off, slope in lines)
    return BoundCurve(tangents, 0.0, 3.0, 0.0, len(tangents), 0.0)


@given(st.one_of(curves(), kinks()))
def test_envelope_minimum_is_the_pairwise_minimum(curve):
    T, bound = least_energy_bound(curve)
    T_ref, bound_ref = _brute_force_minimum(curve)
    assert bound == _at(curve, T)
    if any(tg.slope == -curve.blocking_w_per_s for tg in curve.tangents):
        # A piece of slope exactly -P_b S can be a flat minimum: every point of it ties in
        # exact arithmetic, and rounding decided which one the pairwise minimum took.
        assert bound == pytest.approx(bound_ref, rel=1e-12, abs=1e-9)
    else:
        assert (T, bound) == (T_ref, bound_ref)


@given(curves())
def test_envelope_is_the_maximum_of_all_tangents(curve):
    offsets, slopes = curve.lines
    env = upper_envelope(offsets, slopes)
    assert list(slopes[env]) == sorted(set(slopes[env]))  # strictly increasing slopes
    points = np.array([*_pairwise_breakpoints(curve), -1e3, 1e3])
    every = (offsets[None, :] + slopes[None, :] * points[:, None]).max(axis=1)
    on_env = (offsets[None, env] + slopes[None, env] * points[:, None]).max(axis=1)
    scale = np.abs(offsets).max() + np.abs(slopes).max() * np.abs(points) + 1.0
    assert np.all(np.abs(every - on_env) <= 1e-12 * scale)
    assert set(curve_breakpoints(curve)) <= set(_pairwise_breakpoints(curve))


@given(curves(), st.lists(st.floats(0.0, 6.0), min_size=1, max_size=8))
def test_vectorised_bounds_equal_the_scalar_ones(curve, deadlines):
    T = np.array([max(t, curve.fastest_makespan_s) for t in deadlines])
    assert list(curve.energy_bounds(T)) == [curve.energy_bound(t) for t in T]
    # Below the fastest makespan no plan is accepted: None for one deadline, NaN for many.
    T = np.array(deadlines)
    got = [None if np.isnan(b) else b for b in curve.energy_bounds(T)]
    assert got == [curve.energy_bound(t) for t in T]


def test_free_deadline_on_synthetic_4x8_is_the_earlier_one():
    # Pinned from the pairwise version (commit 94defeb): 284 tangents, 40188 crossings.
    inst, _ = load_instance(FREE_4X8).filter_dominated()
    T, bound = best_free_deadline(inst)
    assert (T, bound) == (0.8237863034507047, 423.81367766379816)


def test_relaxation_rounding_without_deadline_returns_within_its_limit():
    inst = load_instance(FREE_4X8)
    with measured() as used:
        r = energyopt.solve(inst, "relaxation-rounding", time_limit=0.5)
    assert_within(used, 0.5, "relaxation-rounding")
    assert r.termination is not TerminationReason.ERROR and r.objective is not None
    # A loaded machine may cut the curve short, which only loosens the bound.
    assert r.bound <= 423.81367766379816 <= r.objective
