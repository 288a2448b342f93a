"""Algorithms 1-3: posterior update, Thompson sampling, pruning order, windows."""

from __future__ import annotations

import math

import numpy as np
import pytest

from energyopt.tuning import GaussianThompsonSampling, PruningExplorer, posterior


def test_posterior_flat_prior_closed_form():
    # C_b = [10, 12, 14]: Var = (4 + 0 + 4)/3 = 8/3.
    # sigma_b^2 = (0 + 3 / (8/3))^-1 = 8/9; mu_b = 8/9 * (36 / (8/3)) = 8/9 * 13.5 = 12.
    mean, var = posterior([10.0, 12.0, 14.0])
    assert mean == pytest.approx(12.0)
    assert var == pytest.approx(8.0 / 9.0)


def test_posterior_given_prior_closed_form():
    # mu_0 = 0, sigma_0^2 = 1: precision 1 + 3/(8/3) = 17/8 -> sigma_b^2 = 8/17;
    # mu_b = 8/17 * (0/1 + 36/(8/3)) = 8/17 * 13.5 = 108/17.
    mean, var = posterior([10.0, 12.0, 14.0], prior_mean=0.0, prior_var=1.0)
    assert var == pytest.approx(8.0 / 17.0)
    assert mean == pytest.approx(108.0 / 17.0)
    # mu_0 = 20, sigma_0^2 = 4: precision 1/4 + 9/8 = 11/8 -> sigma_b^2 = 8/11;
    # mu_b = 8/11 * (20/4 + 13.5) = 8/11 * 18.5 = 148/11.
    mean, var = posterior([10.0, 12.0, 14.0], prior_mean=20.0, prior_var=4.0)
    assert (mean, var) == (pytest.approx(148.0 / 11.0), pytest.approx(8.0 / 11.0))


def test_posterior_zero_variance_collapses_to_mean():
    assert posterior([7.0, 7.0]) == (7.0, 0.0)
    assert posterior([5.0]) == (5.0, 0.0)
    with pytest.raises(ValueError):
        posterior([])


def test_window_evicts_oldest():
    ts = GaussianThompsonSampling([1, 2], np.random.default_rng(0), window=2)
    for c in (10.0, 12.0, 30.0):
        ts.observe(1, c)
    assert list(ts.costs[1]) == [12.0, 30.0]
    # Window [12, 30]: Var = 81, flat prior -> sigma^2 = 81/2, mu = 21.
    assert ts.belief(1) == (pytest.approx(21.0), pytest.approx(40.5))
    ts_all = GaussianThompsonSampling([1, 2], np.random.default_rng(0), window=0)
    for c in (10.0, 12.0, 30.0):
        ts_all.observe(1, c)
    assert len(ts_all.costs[1]) == 3


def test_predict_argmin_of_point_beliefs_and_cold_arms_first():
    ts = GaussianThompsonSampling([8, 16, 32], np.random.default_rng(1))
    ts.observe(8, 5.0)
    ts.observe(16, 3.0)
    assert ts.predict() == 32  # cold arm under a flat prior is tried first
    ts.observe(32, 4.0)
    # One observation each: point beliefs 5, 3, 4 -> argmin is 16, every time.
    assert {ts.predict() for _ in range(20)} == {16}


def test_predict_samples_follow_beliefs():
    # Arm 1: belief N(10, 0.005); arm 2: belief N(11, 50) -> arm 2 wins about 44 % of draws.
    rng = np.random.default_rng(3)
    ts = GaussianThompsonSampling([1, 2], rng)
    for c in (9.9, 10.1):
        ts.observe(1, c)
    for c in (1.0, 21.0):  # mean 11, Var 100 -> posterior variance 50
        ts.observe(2, c)
    picks = [ts.predict() for _ in range(400)]
    share = picks.count(2) / len(picks)
    # P(N(11, 50) < ~10) = Phi(-1/sqrt(50)) = Phi(-0.141) = 0.444
    assert 0.35 < share < 0.54


def test_thompson_determinism_for_seed():
    def picks(seed):
        ts = GaussianThompsonSampling([1, 2, 3], np.random.default_rng(seed))
        for arm, cs in {1: (10, 14), 2: (11, 13), 3: (9, 16)}.items():
            for c in cs:
                ts.observe(arm, c)
        return [ts.predict() for _ in range(30)]

    assert picks(5) == picks(5)
    assert picks(5) != picks(6)


def test_pruning_order_by_hand():
    ex = PruningExplorer([8, 16, 32, 64, 128], default=32)
    outcomes = {  # (cost, reached), same both rounds
        32: (10.0, True),
        16: (8.0, True),
        8: (math.inf, False),
        64: (12.0, True),
        128: (math.inf, False),
    }
    while (b := ex.next_batch_size()) is not None:
        ex.report(b, *outcomes[b])
    # Round 1: b0 = 32, down 16, 8 (fails), up 64, 128 (fails) -> kept {16, 32, 64}, best 16.
    # Round 2 from b0 = 16: down: 16 (nothing smaller kept), up: 32, 64.
    assert ex.order == [32, 16, 8, 64, 128, 16, 32, 64]
    assert ex.survivors == [16, 32, 64]


def test_pruning_failure_stops_direction_and_round_two_prunes_more():
    ex = PruningExplorer([8, 16, 32, 64], default=16)
    first_round = True

    def outcome(b):
        # Round 1: all converge; round 2: 32 fails.
        if not first_round and b == 32:
            return (1.0, False)
        return ({8: 5.0, 16: 4.0, 32: 3.0, 64: 6.0}[b], True)

    while (b := ex.next_batch_size()) is not None:
        ex.report(b, *outcome(b))
        if ex.round == 1:
            first_round = False
    # Round 1: 16, 8, 32, 64 -> all kept, best 32. Round 2 from 32: b0 = 32 fails, but
    # the descent goes on below it (issue 12, item 7): 16, 8 converge; then up: 64
    # converges -> kept {8, 16, 64}; 32 is pruned.
    assert ex.order == [16, 8, 32, 64, 32, 16, 8, 64]
    assert ex.survivors == [8, 16, 64]


def test_explorer_ignores_out_of_order_reports():
    ex = PruningExplorer([8, 16], default=16)
    assert ex.next_batch_size() == 16
    with pytest.raises(RuntimeError):
        ex.next_batch_size()
    assert ex.report(8, 1.0, True) is False  # not the awaited batch size
    assert ex.pending == 16
    assert ex.report(16, 1.0, True) is True


def test_round_where_nothing_reaches_the_target_prunes_nothing():
    ex = PruningExplorer([8, 16, 32], default=16)
    # Round 1: b0 = 16 fails (the descent goes on), 8 fails (descent ends), up: 32 fails.
    # Every size failed: no evidence to prune on, so the round's sizes stay.
    while (b := ex.next_batch_size()) is not None:
        ex.report(b, 1.0, False)
    assert ex.order == [16, 8, 32]
    assert ex.done and ex.survivors == [8, 16, 32]


def test_generated_instances_run_every_method(tmp_path):
    import energyopt
    from energyopt.tuning.suites import suite

    # Without the Zeus trace the suites fall back to generated instances; on one of them
    # no batch size reached the target in the first pruning round (once a crash).
    for inst in suite("paper", data_dir=tmp_path / "absent"):
        for method in ("zeus", "grid-search", "default", "best-expected-arm"):
            r = energyopt.solve(inst, method, seed=0)
            assert r.has_solution, (inst.name, method, r.message)


def test_pruning_explores_below_a_failing_default():
    # Issue 12, item 7: b0 = 1024 fails; the descent goes on to 8 and 4 (which reach the
    # target), the failing b0 is dropped, and round 2 starts from the cheapest (8).
    e = PruningExplorer([4, 8, 1024], default=1024)
    while not e.done:
        b = e.next_batch_size()
        e.report(b, 5.0 if b == 8 else 7.0, b != 1024)
    assert e.order == [1024, 8, 4, 8, 4]
    assert e.survivors == [4, 8] and 1024 in e.failed


def test_pruning_with_nothing_reaching_the_target_keeps_unfailed_sizes():
    e = PruningExplorer([4, 8, 16, 1024], default=8)
    while not e.done:
        e.report(e.next_batch_size(), 1.0, False)
    # 8 fails, 4 fails (descent ends), then 16 fails (ascent ends): 1024 never failed.
    assert e.survivors == [1024]


def test_grid_search_keeps_successes_of_early_stopped_batch_sizes():
    # Issue 12, item 8: one early-stopped run used to prune its batch size and throw away
    # that batch size's successful observations, until nothing was left to exploit.
    from energyopt.tuning.generators import synthetic_instance
    from energyopt.tuning.policies import GridSearchPolicy

    inst = synthetic_instance(1, batch_sizes=(16, 32), power_limits_w=(100.0, 200.0))
    g = GridSearchPolicy(inst, early_stopping=True)
    g.observe(32, 200.0, 10.0, True)
    g.observe(32, 100.0, 99.0, False)  # stopped early
    assert 32 not in g.pruned and g.observed == {(32, 200.0): 10.0}
    g.observe(16, 200.0, 50.0, False)
    assert 16 in g.pruned
    g.next_index = len(g.grid)
    assert g.next_config() == (32, 200.0, False)
    empty = GridSearchPolicy(inst, early_stopping=True)
    empty.next_index = len(empty.grid)
    assert empty.next_config() == (inst.default_batch_size, 200.0, False)
