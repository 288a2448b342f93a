"""Against the Perseus authors' own results (GPT-3 175B on A100, 8 stages, 1F1B).

Reads ``../shared/data/perseus-sosp24`` and skips when it is absent. Setting of
Perseus Table 6: P_blocking = 83.64 W, baseline = every computation at 1410 MHz.

The authors' frontier files list the crawl's *planned* iteration times (lowtime
rounds every duration down to 1 ms), which sit below the measured makespans
of their plans: their fastest point reads 2.818 s for 12 microbatches, while no
plan runs faster than all-1410 MHz, 2.8365 s. Our points carry measured times.
To compare at "the same iteration time" we align the two fastest ends (both
are the all-critical-at-1410 MHz schedule): the authors' time t is read as
t + (T_min - t_fastest). The energy of our frontier at that time is the least
energy among our plans that meet it, with blocking up to that time.
"""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import energyopt
from energyopt.pipeline import best_at, evaluate, instance_from_perseus_profile
from energyopt.pipeline.evaluator import uniform_clock_choice

DATA = Path(__file__).resolve().parents[3] / ".." / "shared" / "data" / "perseus-sosp24"
PROFILE = DATA / "gpt3-175b+a100_sxm_bf16.csv"
P_BLOCKING_W = 83.64
#: Perseus Table 6, GPT-3 175B on A100: energy savings (%) by number of microbatches.
TABLE6_SAVINGS = {12: 15.20, 24: 14.19, 48: 13.62, 96: 13.32}

pytestmark = pytest.mark.skipif(not PROFILE.exists(), reason="../shared/data/perseus-sosp24 absent")


@pytest.fixture(scope="module", params=[12, 24])
def crawled(request):
    M = request.param
    inst = instance_from_perseus_profile(PROFILE, M, p_blocking_w=P_BLOCKING_W)
    res = energyopt.solve(inst, "perseus", verify=False)
    return M, inst, res


def test_fastest_point_saves_what_table6_reports(crawled):
    M, inst, res = crawled
    base = evaluate(inst, uniform_clock_choice(inst, 1410), None)
    fastest = res.frontier[0]
    # Same iteration time as all-1410 MHz (no slowdown) ...
    assert fastest.makespan_s <= base.iteration_time_s * (1 + 1e-12)
    # ... and at least the saving Perseus reports (15.20 % / 14.19 %, rounded down to 0.1).
    saving = 1 - evaluate(inst, fastest.solution, None).energy_j / base.energy_j
    assert saving * 100 >= {12: 15.2, 24: 14.2}[M]


def test_frontier_at_or_below_the_authors_aligned(crawled):
    M, inst, res = crawled
    ref = pd.read_csv(DATA / f"frontier_gpt3-175b_a100_sxm_mb{M}.csv")
    t_min = res.frontier[0].makespan_s
    offset = t_min - float(ref.time.min())
    assert 0 < offset < 0.05  # the authors' planned times run a few ms per stage short
    excess = []
    for t, e in zip(ref.time, ref.energy):
        T = float(t) + offset
        best = best_at(inst, res.frontier, T)
        ours = best.objective + P_BLOCKING_W * inst.num_stages * (T - best.makespan_s)
        excess.append(ours / float(e) - 1)
    # Measured: -0.594 % (12) and -0.261 % (24) at worst (benchmarks/pem_crawl.py reference).
    assert max(excess) <= 0.0, f"worst excess {max(excess):.4%}"
    # Most of the way strictly below.
    assert np.median(excess) < 0


def test_every_frontier_point_scores_with_the_evaluator(crawled):
    _, inst, res = crawled
    for p in res.frontier[:: max(1, len(res.frontier) // 25)]:
        ev = evaluate(inst, p.solution, None)
        assert ev.iteration_time_s == pytest.approx(p.makespan_s, rel=1e-12)
        assert ev.energy_j == pytest.approx(p.objective, rel=1e-12)


def energy_at(inst, points, T):
    best = best_at(inst, points, T)
    return best.objective + P_BLOCKING_W * inst.num_stages * (T - best.makespan_s)


@pytest.mark.parametrize("seed", [0, 1])
def test_non_monotone_profile_at_or_below_the_grid_crawls(tmp_path, seed):
    # A simulated profile in the published format: GPT-3's times and energies x (1 +- 2 %),
    # so about a quarter of the rows run faster than the next higher clock (as
    # benchmarks/pem_crawl.py --write-noisy-profile writes). Without the authors' frontier,
    # the default crawl must be at or below Algorithm 1 on the grid, with lowtime's
    # exponential model (perseus-exponential) and as printed (perseus-printed).
    df = pd.read_csv(PROFILE)
    rng = np.random.default_rng(seed)
    for col in ("time", "energy"):
        df[col] = df[col] * (1 + rng.uniform(-0.02, 0.02, len(df)))
    path = tmp_path / "noisy.csv"
    df.to_csv(path, index=False)
    inst = instance_from_perseus_profile(path, 12, gpu="a100")
    clocks_down = df.sort_values(["stage", "instruction", "frequency"], ascending=False)
    assert (clocks_down.groupby(["stage", "instruction"]).time.diff() < 0).any()
    ours = energyopt.solve(inst, "perseus", verify=False).frontier
    for method in ("perseus-exponential", "perseus-printed"):
        for p in energyopt.solve(inst, method, verify=False).frontier:
            assert energy_at(inst, ours, p.makespan_s) <= p.objective * (1 + 1e-12)
