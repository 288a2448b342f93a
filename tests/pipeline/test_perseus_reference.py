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

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "perseus-sosp24"
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
    assert fastest.deadline_s <= base.iteration_time_s * (1 + 1e-12)
    # ... and at least the saving Perseus reports (15.20 % / 14.19 %, rounded down to 0.1).
    saving = 1 - evaluate(inst, fastest.solution, None).energy_j / base.energy_j
    assert saving * 100 >= {12: 15.2, 24: 14.2}[M]


def test_frontier_within_half_a_percent_of_the_authors(crawled):
    M, inst, res = crawled
    ref = pd.read_csv(DATA / f"frontier_gpt3-175b_a100_sxm_mb{M}.csv")
    t_min = res.frontier[0].deadline_s
    offset = t_min - float(ref.time.min())
    assert 0 < offset < 0.05  # the authors' planned times run a few ms per stage short
    excess = []
    for t, e in zip(ref.time, ref.energy):
        T = float(t) + offset
        best = best_at(inst, res.frontier, T)
        ours = best.objective + P_BLOCKING_W * inst.num_stages * (T - best.deadline_s)
        excess.append(ours / float(e) - 1)
    assert max(excess) <= 0.005, f"worst excess {max(excess):.4%}"
    # Most of the way we are below the authors' frontier.
    assert np.median(excess) < 0


def test_every_frontier_point_scores_with_the_evaluator(crawled):
    _, inst, res = crawled
    for p in res.frontier[:: max(1, len(res.frontier) // 25)]:
        ev = evaluate(inst, p.solution, None)
        assert ev.iteration_time_s == pytest.approx(p.deadline_s, rel=1e-12)
        assert ev.energy_j == pytest.approx(p.objective, rel=1e-12)
