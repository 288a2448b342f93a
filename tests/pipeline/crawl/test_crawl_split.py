"""The named steps of the Perseus crawl (energyopt.pipeline.crawl.grid), by hand."""

import importlib
import math

import numpy as np
import pytest

from energyopt.pipeline import OptionTable, PemInstance
from energyopt.pipeline.crawl.maxflow import MinCut, min_cut_with_lower_bounds
from energyopt.pipeline.dag import CompactDag, IntegerTimer
from energyopt.pipeline.schedules import Computation

crawl_module = importlib.import_module("energyopt.pipeline.crawl.grid")
step_module = importlib.import_module("energyopt.pipeline.crawl.step")
finish_module = importlib.import_module("energyopt.pipeline.crawl.finish")


def chain_and_side_instance() -> PemInstance:
    # A -> B in series (1 s or 2 s each) and C alone (always 1 s): with tau = 1 s and
    # everything slowest, A and B are critical (makespan 4) and C has 3 units of slack.
    tables = {
        "A": OptionTable((1400, 1000), (1.0, 2.0), (10.0, 4.0)),
        "B": OptionTable((1400, 1000), (1.0, 2.0), (10.0, 6.0)),
        "C": OptionTable((1400,), (1.0,), (3.0,)),
    }
    comps = (
        Computation(0, "compute", 0, "A"),
        Computation(1, "compute", 0, "B"),
        Computation(2, "compute", 0, "C"),
    )
    return PemInstance(3, comps, ((0, 1),), tables, 1.0)


@pytest.fixture
def parts():
    inst = chain_and_side_instance()
    model = step_module._Model(inst, 1.0, "hull", "down")
    dag = CompactDag(inst)
    timer = IntegerTimer(dag, model.d_max)
    return inst, model, dag, timer, step_module._EdgeCentricDag(dag)


def _state(d, L):
    stats = crawl_module._start_stats(1.0, "hull", "one", "down", 2)
    return step_module._CrawlState(d.copy(), [d.copy()], [L], stats)


def test_critical_dag_keeps_the_critical_chain_with_eq8_bounds(parts):
    _, model, _, timer, graph = parts
    d = model.d_max.copy()
    assert d.tolist() == [2, 2, 1]
    es = timer.earliest_start(d)
    cap = step_module._critical_dag(model, timer, graph, d, es, es + d, 4)
    assert cap.crit.tolist() == [0, 1]
    # Edges: A (0 -> 1), B (2 -> 3), precedence A -> B (1 -> 2), source 6 -> A, B -> sink 7.
    assert cap.tail.tolist() == [0, 2, 1, 6, 3]
    assert cap.head.tolist() == [1, 3, 2, 0, 7]
    # At their slowest A and B save nothing by slowing (l = 0); speeding up costs
    # (10 - 1) - (4 - 2) = 7 J/s for A and (10 - 1) - (6 - 2) = 5 J/s for B.
    assert cap.lower.tolist() == [0.0, 0.0, 0.0, 0.0, 0.0]
    assert cap.upper.tolist() == [7.0, 5.0, math.inf, math.inf, math.inf]


def test_min_cut_step_speeds_up_the_cheaper_computation(parts):
    _, model, _, timer, graph = parts
    d = model.d_max.copy()
    es = timer.earliest_start(d)
    cap = step_module._critical_dag(model, timer, graph, d, es, es + d, 4)
    stats = {"max_flow_calls": 0, "infeasible_flow_steps": 0}
    cut, lower_used = step_module._min_cut_step(
        crawl_module._cut_function("one"), cap, graph, stats
    )
    assert cut.status == "ok" and lower_used
    assert stats == {"max_flow_calls": 1, "infeasible_flow_steps": 0}
    speed, slow = step_module._cut_computations(cut, cap, model, d, lower_used)
    assert speed.tolist() == [1] and slow.tolist() == []


def test_min_cut_step_falls_back_to_speed_up_only_cut(parts):
    _, model, _, timer, graph = parts
    d = model.d_max.copy()
    es = timer.earliest_start(d)
    cap = step_module._critical_dag(model, timer, graph, d, es, es + d, 4)
    cap = cap._replace(lower=cap.lower + np.r_[1.0, 0.0, 0.0, 0.0, 0.0])
    seen = []

    def refuse_lower_bounds(n, tail, head, lower, upper, s, t):
        seen.append(float(np.sum(lower)))
        if np.sum(lower) > 0:
            return MinCut("infeasible")
        return min_cut_with_lower_bounds(n, tail, head, lower, upper, s, t)

    stats = {"max_flow_calls": 0, "infeasible_flow_steps": 0}
    cut, lower_used = step_module._min_cut_step(refuse_lower_bounds, cap, graph, stats)
    assert cut.status == "ok" and not lower_used
    assert seen == [1.0, 0.0]
    assert stats == {"max_flow_calls": 2, "infeasible_flow_steps": 1}


def test_apply_cut_records_one_step_and_its_speed_up_only_durations(parts):
    _, model, _, timer, _ = parts
    d = np.asarray([2, 1, 1], dtype=np.int64)
    state = _state(d, 3)
    reps = step_module._apply_cut(
        state, model, timer, np.asarray([0]), np.asarray([1]), 3, False, None
    )
    assert reps == 1 and state.steps == 1
    assert state.durations.tolist() == [1, 2, 1]
    assert [r.tolist() for r in state.rows] == [[2, 1, 1], [1, 2, 1]]
    assert state.planned_units == [3, 2] and state.previous_makespan == 3
    assert state.speedup_only.tolist() == [1, 1, 1]


def test_undo_slowdowns_reverts_a_step_that_did_not_shorten(parts):
    _, _, _, timer, _ = parts
    state = _state(np.asarray([2, 1, 1]), 3)
    state.rows.append(np.asarray([1, 2, 1]))
    state.planned_units.append(2)
    state.durations = np.asarray([1, 2, 1])  # still 3 units: the slowdown of B undid A's gain
    state.speedup_only = np.asarray([1, 1, 1])
    state.previous_makespan = 3
    es, ef, L = step_module._undo_slowdowns(state, timer)
    assert L == 2 and ef.max() == 2 and es.tolist() == [0, 1, 0]
    assert state.durations.tolist() == [1, 1, 1] and state.rows[-1].tolist() == [1, 1, 1]
    assert state.planned_units == [3, 2]
    assert state.stats["slowdown_reverted_steps"] == 1 and state.speedup_only is None


def test_undo_slowdowns_keeps_a_step_that_shortened(parts):
    _, _, _, timer, _ = parts
    state = _state(np.asarray([1, 2, 1]), 3)
    state.speedup_only = np.asarray([1, 1, 1])
    state.previous_makespan = 4
    _, _, L = step_module._undo_slowdowns(state, timer)
    assert L == 3 and state.durations.tolist() == [1, 2, 1]
    assert state.stats["slowdown_reverted_steps"] == 0 and state.speedup_only is None


def test_measured_cut_step_walks_to_t_min_and_stops_there(parts):
    inst, _, dag, _, graph = parts
    tables = finish_module._measured_tables(inst)
    assert tables.next_faster[:, :2].tolist() == [[-1, 0], [-1, 0], [-1, -1]]
    assert tables.next_slower[:, :2].tolist() == [[1, -1], [1, -1], [-1, -1]]
    times = tables.time_s[tables.table_of]
    timer = IntegerTimer(dag, times.max(axis=1))
    slowest = np.asarray([1, 1, 0])
    # B is cheaper to speed up (5 J/s against A's 7 J/s): it goes first, then A.
    x = finish_module._measured_cut_step(tables, timer, graph, slowest, 2.0)
    assert x.tolist() == [1, 0, 0]
    x = finish_module._measured_cut_step(tables, timer, graph, x, 2.0)
    assert x.tolist() == [0, 0, 0]
    assert finish_module._measured_cut_step(tables, timer, graph, x, 2.0) is None
    rows = finish_module._finish_to_fastest(inst, dag, slowest)
    assert [r.tolist() for r in rows] == [[1, 0, 0], [0, 0, 0]]
