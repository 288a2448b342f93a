"""The named steps of the Perseus crawl (crawl/perseus.py) and of the one-flow cut (maxflow)."""

import dataclasses
import math

import numpy as np
import pytest

from energyopt.pipeline.crawl import maxflow, perseus
from energyopt.pipeline.crawl.trace import CrawlTrace


# -- perseus_frontier's steps ----------------------------------------------------------------
@pytest.mark.parametrize(
    ("cost_model", "rounding", "crawl", "runs"),
    [
        ("hull", "down", "exact", [("exact", "-")]),
        # The exact crawl has no rounding: one hull run whatever ``rounding`` says.
        ("hull", "both", "exact", [("exact", "-")]),
        ("both", "both", "exact", [("exact", "-"), ("exponential", "down"), ("exponential", "up")]),
        ("exponential", "up", "exact", [("exponential", "up")]),
        ("hull", "both", "grid", [("hull", "down"), ("hull", "up")]),
        ("both", "down", "grid", [("hull", "down"), ("exponential", "down")]),
    ],
)
def test_crawl_runs(cost_model, rounding, crawl, runs):
    assert perseus._crawl_runs(cost_model, rounding, crawl) == runs


@pytest.mark.parametrize(
    ("options", "word"),
    [
        (("hull", "sideways", "exact"), "rounding"),
        (("linear", "down", "exact"), "cost_model"),
        (("hull", "down", "lattice"), "crawl"),
    ],
)
def test_crawl_runs_rejects_unknown_values(options, word):
    with pytest.raises(ValueError, match=word):
        perseus._crawl_runs(*options)


def _trace(rows, stopped, steps):
    k = len(rows)
    return CrawlTrace(
        choices=np.asarray(rows, dtype=np.int64),
        planned_time_s=np.arange(k, dtype=float),
        planned_energy_j=np.arange(k, dtype=float) + 10,
        time_s=np.arange(k, dtype=float) + 0.5,
        energy_j=np.arange(k, dtype=float) + 20,
        stats={"stopped": stopped, "steps": steps, "cost_model": "exponential"},
    )


def test_merged_trace_keeps_every_plan_and_the_first_early_stop():
    one = _trace([[0, 1], [1, 1]], "", 2)
    two = _trace([[2, 2]], "max_steps=1", 1)
    runs = [("exact", "-"), ("exponential", "down")]
    assert perseus._merged_trace([one], runs[:1], "hull", "down") is one
    merged = perseus._merged_trace([one, two], runs, "both", "down")
    assert merged.choices.tolist() == [[0, 1], [1, 1], [2, 2]]
    assert merged.time_s.tolist() == [0.5, 1.5, 0.5]
    assert merged.stats["stopped"] == "max_steps=1"
    assert merged.stats["steps"] == 3
    assert merged.stats["cost_model"] == "both"
    assert merged.stats["runs"] == [
        {"cost_model": "exact", "rounding": "-", "steps": 2},
        {"cost_model": "exponential", "rounding": "down", "steps": 1},
    ]


def test_merged_plans_take_the_narrowest_type_that_holds_them():
    narrow = dataclasses.replace(
        _trace([[0, 1], [1, 1]], "", 2), choices=np.int16([[0, 1], [1, 1]])
    )
    runs = [("exact", "-"), ("repair", "exponential")]
    merged = perseus._merged_trace([narrow, _trace([[2, 300]], "", 1)], runs, "hull", "down")
    assert merged.choices.dtype == np.int16
    assert merged.choices.tolist() == [[0, 1], [1, 1], [2, 300]]
    # An index beyond int16 keeps the wide type, whatever block it sits in.
    merged = perseus._merged_trace([narrow, _trace([[2, 40000]], "", 1)], runs, "hull", "down")
    assert merged.choices.dtype == np.int64
    assert merged.choices.tolist() == [[0, 1], [1, 1], [2, 40000]]
    assert perseus._plan_dtype([np.zeros((0, 2), np.int64), np.int8([[1, 2]])]) == np.int8
    assert perseus._plan_dtype([np.uint16([[65535]]), np.int16([[1]])]) == np.uint16
    assert perseus._plan_dtype([np.uint16([[65535]]), np.int16([[-1]])]) == np.int32


def test_fastest_plan_joins_a_stopped_crawl_in_its_plan_type():
    from energyopt.pipeline import synthetic_instance
    from energyopt.pipeline.evaluator import evaluate

    inst = synthetic_instance(2, 3, 4, seed=0)
    k = inst.num_computations
    trace = _trace([[0] * k, [1] * k], "max_steps=1", 1)
    trace = dataclasses.replace(trace, choices=trace.choices.astype(np.int16))
    got = perseus._with_fastest_plan(inst, trace)
    assert got.choices.dtype == np.int16
    assert got.choices[:2].tolist() == trace.choices.tolist()
    fastest = [int(np.argmin(t)) for t in inst.option_times]  # by measured time
    assert got.choices[2].tolist() == fastest
    assert got.time_s[2] == evaluate(inst, fastest, None).iteration_time_s
    assert np.isnan(got.planned_time_s[2])


def test_frontier_stats_measures_planned_against_measured_times():
    trace = _trace([[0, 1], [1, 1], [2, 2]], "", 2)
    trace.planned_time_s[1] = np.nan  # a plan the crawl did not plan (the fastest plan)
    trace.time_s[2] = 2.75

    class _Instance:
        source = "hand"

    stats = perseus._frontier_stats(_Instance(), trace, ())
    assert stats["max_measured_minus_planned_s"] == 0.75
    assert stats["num_schedules"] == 3 and stats["num_points"] == 0
    assert stats["steps"] == 2 and stats["source"] == "hand"


# -- min_cut_one_flow's steps ----------------------------------------------------------------
def test_lower_bound_node_terms_are_inflow_minus_outflow():
    # 0 -> 1 (l = 3), 1 -> 2 (l = 5), 0 -> 2 (l = 1): b = (-4, -2, 6), summing to zero.
    tail, head = np.array([0, 1, 0]), np.array([1, 2, 2])
    b = maxflow._lower_bound_node_terms(tail, head, np.array([3, 5, 1]), 3)
    assert b.dtype == np.int64
    assert b.tolist() == [-4, -2, 6]


def test_one_flow_capacities_scale_twice_the_lower_bounds_with_the_finite_uppers():
    lower = np.array([1.0, 0.0, 2.0])
    upper = np.array([3.0, math.inf, 2.0])
    lo, span = maxflow._one_flow_capacities(lower, upper, ~np.isfinite(upper))
    unit = maxflow._FINITE_TOTAL / (2 * 3.0 + 5.0)
    assert lo.tolist() == [round(unit), 0, round(2 * unit)]
    assert span.tolist() == [round(3 * unit) - round(unit), maxflow._INF_INT, 0]


def test_one_flow_source_side_pays_node_terms():
    # Path 0 -> 1 -> 2 with capacities 5 and 2; node 1 owes 4 to the sink (b = -4).
    side = maxflow._one_flow_source_side(
        3, np.array([0, 1]), np.array([1, 2]), np.array([5, 2]), np.array([0, -4, 0]), 0, 2
    )
    # Cutting 0 -> 1 costs 5; keeping 1 with the source costs 2 + 4 = 6.
    assert side.tolist() == [True, False, False]
