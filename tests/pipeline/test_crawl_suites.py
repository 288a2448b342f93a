"""The pipeline suites: smoke solved by every method (heuristics never below the optimum)."""

import pytest

import energyopt
from energyopt.pipeline.suites import suite


def test_smoke_suite_every_method():
    insts = suite("smoke")
    assert len(insts) == 3 and all(i.deadline_s for i in insts)
    for inst in insts:
        assert "simulated" in inst.source
        exact = energyopt.solve(inst, "bruteforce").objective
        for name, method in energyopt.methods("pipeline").items():
            res = energyopt.solve(inst, name, time_limit=20)
            if res.has_solution:
                assert res.objective >= exact * (1 - 1e-9), name
            elif not method.exact:
                # Only a sweep without a plan fast enough may come back empty.
                assert name.startswith("zeus"), name


def test_paper_suite_shapes_and_errors():
    insts = suite("paper")
    assert [(i.num_stages, i.num_microbatches) for i in insts] == [
        (8, 12),
        (8, 24),
        (8, 48),
        (8, 96),
        (4, 8),
        (8, 16),
    ]
    assert suite("paper")[0] == insts[0]  # deterministic
    with pytest.raises(ValueError, match="unknown suite"):
        suite("huge")
