"""energyopt.compare and `energyopt solve -m A -m B`: gaps against the best bound of the call."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import energyopt
from energyopt.cli import main

SMOKE = Path(__file__).resolve().parents[2] / "instances" / "pipeline" / "smoke"
FILE = SMOKE / "000-synthetic-1f1b-2x2-k3-seed0.json"


def test_compare_rows_and_frontier_summary():
    inst = energyopt.load_instance(FILE)
    frame = energyopt.compare(inst, ["highs", "perseus", "envpipe"], time_limit=30)
    assert list(frame["method"]) == ["highs", "perseus", "envpipe"]
    best = frame.loc["highs", "objective"]  # highs proves the optimum (60.5014 J)
    assert frame.loc["highs", "status"] == "optimal"
    assert (frame["best_bound"] == best).all() and (frame["proven_by"] == "highs").all()
    for m in ("perseus", "envpipe"):
        o = frame.loc[m, "objective"]
        assert frame.loc[m, "gap"] == pytest.approx((o - best) / o, abs=1e-12)
    assert (
        frame.loc["perseus", "frontier_points_with_bound"]
        == frame.loc["perseus", "frontier_points"]
    )
    assert frame.loc["perseus", "frontier_below_bound"] == 0
    assert 0 <= frame.loc["perseus", "frontier_within_1%"] <= 1
    assert math.isnan(frame.loc["envpipe", "frontier_points"])  # no frontier


def test_cli_prints_numeric_gaps_and_who_proved_the_bound(capsys):
    assert main(["solve", str(FILE), "-m", "highs", "-m", "perseus", "-m", "envpipe"]) == 0
    out = capsys.readouterr().out
    table = out.split("\n\n")[0]  # the method table; the frontier summary follows
    rows = {ln.split()[0]: ln for ln in table.splitlines() if ln.split()}
    for m in ("perseus", "envpipe"):
        assert "highs" in rows[m].split()  # proven by
        assert any(c.endswith("%") and c != "-" for c in rows[m].split())
    assert "frontier of" in out


def test_cli_json_summarises_the_frontier_unless_asked(capsys):
    assert main(["solve", str(FILE), "-m", "perseus", "--json"]) == 0
    short = json.loads(capsys.readouterr().out)
    assert short["frontier"] == [] and short["frontier_points"] > 0
    assert short["frontier_summary"]["points_with_bound"] == short["frontier_points"]
    assert main(["solve", str(FILE), "-m", "perseus", "--json", "--full-frontier"]) == 0
    full = json.loads(capsys.readouterr().out)
    assert len(full["frontier"]) == short["frontier_points"]
    assert all(p["bound"] is not None for p in full["frontier"])
    assert main(["solve", str(FILE), "-m", "perseus", "--full-frontier"]) == 2
    assert "--full-frontier: only with --json" in capsys.readouterr().err


def test_an_objective_below_the_best_bound_is_named_a_bug():
    from energyopt.core.compare import cross_bounded
    from energyopt.core.result import Result
    from energyopt.core.status import SolutionStatus, TerminationReason

    inst = energyopt.load_instance(FILE)

    def res(method, objective, bound=None):
        return Result("pipeline", inst.instance_id, method, TerminationReason.COMPLETED,
                      SolutionStatus.FEASIBLE, objective=objective, bound=bound)  # fmt: skip

    a, b = cross_bounded(inst, [res("highs", 100.0, 100.0), res("envpipe", 90.0)])
    assert (a.extra["gap_to_best_bound"], a.message) == (0.0, "")
    assert b.extra["gap_to_best_bound"] == pytest.approx(-0.1 / 1.0)
    assert "below the best proven bound" in b.message and "highs" in b.message
