"""Frontier cross-check (PEM instances): no point of any method below a proven exact frontier."""

from __future__ import annotations

import json

from benchutil import fake_record

from energyopt.bench.cells import make_cell
from energyopt.bench.frontiers import frontier_contradictions
from energyopt.bench.store import ResultsStore
from energyopt.pipeline import random_dag_instance


def test_points_below_the_exact_frontier_are_flagged(tmp_path):
    inst = random_dag_instance(4, 2, seed=3)
    data = json.loads(inst.to_json())
    pbs = data["p_blocking_w"] * data["num_stages"]  # 50 W x 3 stages = 150 W
    store = tmp_path / "r.sqlite"
    exact = make_cell(inst, "exact-frontier", seed=0, time_limit_s=1, suite="x", origin="x")
    other = make_cell(inst, "bruteforce", seed=0, time_limit_s=1, suite="x", origin="x")
    ref = fake_record(exact, 7.0, 7.0, status="optimal", termination="optimal")
    ref.result["frontier"] = [
        {"deadline_s": 1.0, "objective": 10.0},
        {"deadline_s": 2.0, "objective": 7.0},
    ]
    heur = fake_record(other, 7.0, None)
    heur.result["frontier"] = [
        {"deadline_s": 1.5, "objective": 10.0 + pbs * 0.5 - 0.1},  # below E*(1.5): flagged
        {"deadline_s": 2.0, "objective": 7.0},  # on the frontier: fine
        {"deadline_s": 0.9, "objective": 50.0},  # faster than the fastest: flagged
        {"deadline_s": 2.5, "objective": 1.0},  # beyond the slowest point: not compared
    ]
    with ResultsStore(store, create=True) as db:
        run = db.start_run(["test"], "local", 1)
        db.add_instances([(inst.instance_id, "pipeline", inst.name, inst.to_json(indent=None))])
        db.add_cell(exact.to_spec(), ref, run)
        db.add_cell(other.to_spec(), heur, run)
        lines = frontier_contradictions(db)
    assert len(lines) == 2
    assert "(1.5 s," in lines[0] and "below the exact frontier" in lines[0]
    assert "0.9 s is faster than the fastest" in lines[1]
