"""Randomized Greedy's numpy batch (greedy_batch) against its Python loop (issue 17).

Clusters of more than ``greedy.LOOP_CLASSES`` node classes run the iterations side by
side with numpy; the tests force one path or the other on the same points and require
the same schedule, f_OBJ, per-iteration trace and improvement count, and check the
batch's schedules with the evaluator.
"""

from __future__ import annotations

import random

import pytest

from energyopt.capacity import evaluate, greedy
from energyopt.capacity.generators import job_stream, random_point, scenario_cluster
from energyopt.capacity.greedy_batch import _stream
from energyopt.capacity.simulator import simulate
from energyopt.core.timelimit import TimeBudget

from .helpers import menu_point


def run(monkeypatch, path: str, inst, iterations: int, **kw):
    """``randomized_greedy`` through the loop (``path="loop"``) or the numpy batch."""
    monkeypatch.setattr(greedy, "LOOP_CLASSES", 10**9 if path == "loop" else -1)
    return greedy.randomized_greedy(inst, iterations, **kw)


def same(a, b) -> bool:
    return (
        a[0] == b[0]
        and a[1] == b[1]
        and a[2].best_per_iteration == b[2].best_per_iteration
        and a[2].improvements == b[2].improvements
        and a[2].stopped_at_deadline == b[2].stopped_at_deadline
    )


@pytest.mark.parametrize("seed", range(24))
def test_batch_equals_loop_on_random_points(monkeypatch, seed):
    # 1-12 nodes (every node its own class), 1-40 jobs, 0-100 % running, 1-4 GPUs.
    inst = random_point(
        seed, 1 + seed % 12, 1 + (7 * seed) % 40, max_gpus=1 + seed % 4,
        running_fraction=(seed % 5) / 4,
    )  # fmt: skip
    for p in (0.5, 1.0, 0.0):
        kw = dict(seed=seed, swap_probability=p)
        loop = run(monkeypatch, "loop", inst, 40, **kw)
        batch = run(monkeypatch, "batch", inst, 40, **kw)
        assert same(loop, batch)


@pytest.mark.parametrize("seed", range(12))
def test_batch_equals_loop_with_repeated_classes_and_ties(monkeypatch, seed):
    # Classes of several nodes (the node chosen among them: fewest free GPUs, longest at
    # that level), repeated epoch times (ties in the rule's order), anchored jobs.
    for variant in (True, False):
        inst = menu_point(seed, 3 + seed % 8, 4 + seed % 20, variant)
        loop = run(monkeypatch, "loop", inst, 40, seed=seed)
        batch = run(monkeypatch, "batch", inst, 40, seed=seed)
        assert same(loop, batch)


def test_batch_equals_loop_on_simulated_points(monkeypatch):
    # Points the simulator meets: more jobs than GPUs (postponements), running jobs with
    # fractional progress, scenario 2's mixed cluster.
    nodes = scenario_cluster(8, scenario=2)
    sim = simulate(
        nodes, job_stream(nodes, 80, seed=3, load=1.4), "randomized-greedy",
        max_iterations=5, keep_points_every=4, max_calls=60,
    )  # fmt: skip
    points = [p for p in sim.points if p.num_jobs > 1]
    postponed = 0
    for p in points:
        loop = run(monkeypatch, "loop", p, 30, seed=2)
        batch = run(monkeypatch, "batch", p, 30, seed=2)
        assert same(loop, batch)
        postponed += loop[0].count(None)
    assert postponed > 0


def test_heterogeneous_point_takes_the_batch_and_the_evaluator_agrees(monkeypatch):
    inst = random_point(3, 30, 60, max_gpus=4, running_fraction=0.5)
    assert len({n.node_class for n in inst.nodes}) > greedy.LOOP_CLASSES
    calls = []
    batch_search = greedy.greedy_batch.batch_search
    monkeypatch.setattr(
        greedy.greedy_batch, "batch_search", lambda *a: calls.append(1) or batch_search(*a)
    )
    assignment, cost, trace = greedy.randomized_greedy(inst, 200, seed=5)
    assert calls == [1] and len(trace.best_per_iteration) == 200
    ev = evaluate(inst, assignment)
    assert ev.feasible, ev.violations  # work-conserving, within capacity
    assert cost == pytest.approx(ev.objective, rel=1e-9, abs=1e-12)
    monkeypatch.undo()
    assert same((assignment, cost, trace), run(monkeypatch, "loop", inst, 200, seed=5))


def test_batch_deadline(monkeypatch):
    inst = random_point(4, 20, 30, max_gpus=3)
    first = run(monkeypatch, "batch", inst, 1, seed=1)
    # A deadline already passed: iteration 0 only, and the trace says it stopped.
    past = run(monkeypatch, "batch", inst, 500, seed=1, budget=TimeBudget(0.0))
    assert past[:2] == first[:2] and past[2].best_per_iteration == first[2].best_per_iteration
    assert past[2].stopped_at_deadline
    # A far deadline: every iteration, in several batches, as without one.
    far = run(monkeypatch, "batch", inst, 500, seed=1, budget=TimeBudget(600.0))
    none = run(monkeypatch, "loop", inst, 500, seed=1)
    assert same(far, none)


def test_batches_of_64_rows(monkeypatch):
    # The memory bound splits 300 iterations into batches of 64 rows: the draws continue
    # one stream across batches and the best is kept across them.
    inst = random_point(6, 25, 40, max_gpus=4)
    loop = run(monkeypatch, "loop", inst, 300, seed=9)
    monkeypatch.setattr(greedy.greedy_batch, "ROW_CELLS", 1)
    sizes = []
    construct = greedy.greedy_batch._construct
    monkeypatch.setattr(
        greedy.greedy_batch,
        "_construct",
        lambda tb, o, p: sizes.append(len(o)) or construct(tb, o, p),
    )
    assert same(loop, run(monkeypatch, "batch", inst, 300, seed=9))
    assert sizes == [64, 64, 64, 64, 44]


def test_numpy_stream_is_pythons_random():
    for seed in (0, 1, 12345, 2**40 + 3):
        py = random.Random(seed)
        gen = _stream(seed)
        for n in (1, 7, 1000):  # consecutive draws continue one stream
            assert gen.random(n).tolist() == [py.random() for _ in range(n)]
