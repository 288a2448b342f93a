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
    ] + 2 * [(8, m) for m in (12, 12, 24, 24, 48, 48, 96, 96)]
    gpt3, bloom = insts[6:14], insts[14:]
    assert all(i.source.startswith("measured: Perseus") for i in gpt3 + bloom)
    assert all(i.name.startswith("bloom-a100-") and "bloom+a100" in i.source for i in bloom)
    # Bloom at 12 microbatches: all 1410 MHz runs 2.8235 s (pem_authors.py envpipe: 28.235).
    assert bloom[0].deadline_s == pytest.approx(2.8235, abs=1e-4)
    # Deadlines: the all-max-clock iteration time (12 microbatches: 2.8365 s, data README)
    # and 1.1 x it.
    assert gpt3[0].deadline_s == pytest.approx(2.8365, abs=1e-4)
    assert gpt3[1].deadline_s == pytest.approx(1.1 * gpt3[0].deadline_s, rel=1e-8)
    assert suite("paper")[0] == insts[0]  # deterministic
    with pytest.raises(ValueError, match="unknown suite"):
        suite("huge")
