"""Pluggable MILP solver: SCIP (pyscipopt) and HiGHS give the same Result on every family."""

from __future__ import annotations

from pathlib import Path

import pytest

import energyopt
from energyopt.core.milp_solvers import UnknownSolverError, check_solver, solve_milp

ROOT = Path(__file__).resolve().parents[2]
FILES = {
    "pipeline": "instances/pipeline/smoke/000-synthetic-1f1b-2x2-k3-seed0.json",
    "capacity": "instances/capacity/smoke/000-random-point-0-work-conserving.json",
    "powercap": "instances/powercap/smoke/000-random-event-j3-g8x4-eta0-5-seed1.json",
}


def _scip_available() -> bool:
    try:
        import pyomo.environ  # noqa: F401
        from pyomo.contrib.solver.common.factory import SolverFactory

        return bool(SolverFactory("scip_direct").available())
    except Exception:
        return False


def test_unknown_solver_is_bad_input():
    with pytest.raises(UnknownSolverError, match=r"unknown MILP solver .cplx.*highs"):
        check_solver("cplx")
    with pytest.raises(UnknownSolverError):
        solve_milp(None, solver="cplx")
    assert check_solver("scip") == "scip_direct"


@pytest.mark.skipif(not _scip_available(), reason="SCIP (pyscipopt) not installed")
@pytest.mark.parametrize("family", sorted(FILES))
def test_scip_and_highs_agree(family):
    inst = energyopt.load_instance(ROOT / FILES[family])
    highs = energyopt.solve(inst, "highs", time_limit=30)
    scip = energyopt.solve(inst, "highs", time_limit=30, solver="scip")
    assert highs.solver == "highs" and scip.solver == "scip_direct" and scip.solver_version
    assert scip.termination.value == highs.termination.value == "optimal"
    assert scip.status.value == "optimal"
    assert scip.objective == pytest.approx(highs.objective, rel=1e-6)
    assert scip.bound == pytest.approx(highs.bound, rel=1e-6)
    assert scip.gap == pytest.approx(0.0, abs=1e-6)


@pytest.mark.skipif(not _scip_available(), reason="SCIP (pyscipopt) not installed")
def test_scip_time_limit_maps_to_the_same_result():
    """A MILP SCIP cannot finish in 0.01 s: time_limit, with what it has."""
    import pyomo.environ as pyo

    m = pyo.ConcreteModel()
    n = 60
    m.x = pyo.Var(range(n), domain=pyo.Binary)
    w = [(7 * i * i + 3 * i) % 97 + 1 for i in range(n)]
    m.cap = pyo.Constraint(expr=sum(w[i] * m.x[i] for i in range(n)) >= sum(w) / 2 + 0.5)
    m.obj = pyo.Objective(expr=sum((w[i] + (i % 5)) * m.x[i] for i in range(n)))
    out = solve_milp(m, solver="scip", time_limit=0.01)
    assert out.termination.value in ("time_limit", "optimal")
    if out.termination.value == "time_limit" and out.bound is not None and out.objective:
        assert out.bound <= out.objective + 1e-6
