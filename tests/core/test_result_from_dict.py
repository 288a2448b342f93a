"""Result.from_dict: a stored record comes back as a typed Result; FrontierPoint's names."""

from __future__ import annotations

import json

import pytest

import energyopt
from energyopt.core.result import FrontierPoint, Result
from energyopt.core.status import SolutionStatus, TerminationReason
from energyopt.pipeline import random_dag_instance


def test_round_trip_of_a_frontier_result():
    res = energyopt.solve(random_dag_instance(5, 3, seed=1), "exact-frontier", seed=4)
    back = Result.from_dict(json.loads(res.to_json()))
    assert back.termination is TerminationReason.OPTIMAL and back.status is SolutionStatus.OPTIMAL
    assert (back.objective, back.bound, back.seed) == (res.objective, res.bound, 4)
    assert [p.makespan_s for p in back.frontier] == [p.makespan_s for p in res.frontier]
    assert [p.objective for p in back.frontier] == [p.objective for p in res.frontier]
    # Solutions stay the stored data; the family rebuilds its own type.
    assert back.solution == res.to_dict()["solution"]
    assert back.gap == res.gap


def test_from_dict_names_the_bad_field():
    rec = energyopt.solve(random_dag_instance(4, seed=0), "bruteforce").to_dict()
    with pytest.raises(ValueError, match="'termination' is missing"):
        Result.from_dict({k: v for k, v in rec.items() if k != "termination"})
    with pytest.raises(ValueError, match="expected a number"):
        Result.from_dict({**rec, "objective": "12"})


def test_frontier_point_makespan_and_its_old_name():
    p = FrontierPoint(2.0, 7.0)
    assert p.makespan_s == p.makespan_s == 2.0
    # Records written before the rename (key "deadline_s") still read.
    assert FrontierPoint.from_dict({"deadline_s": 1.5, "objective": 3.0}).makespan_s == 1.5
