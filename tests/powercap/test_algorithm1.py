"""PowerFlow's Algorithm 1 as printed (``greedy-printed``): hand-checked events."""

from __future__ import annotations

import pytest

import energyopt
from energyopt.powercap import EventJob, JobOption, PowercapInstance
from energyopt.powercap.algorithm1 import printed_greedy
from energyopt.powercap.suites import random_event


def two_jobs(eta: float) -> PowercapInstance:
    """One node of 4 GPUs, one clock (1000 MHz), w = 0, no idle power, P_max = 100 W.

    A (100 iterations): 1 GPU 1.0 s/it 100 W; 2 GPUs 0.6 s 180 W; 4 GPUs 0.4 s 340 W.
    B (100 iterations): 1 GPU 2.0 s/it 100 W; 2 GPUs 1.2 s 180 W. Cap = eta * 400 W.
    """
    a = (
        JobOption(1, 1000, 1.0, 100.0),
        JobOption(2, 1000, 0.6, 180.0),
        JobOption(4, 1000, 0.4, 340.0),
    )
    b = (JobOption(1, 1000, 2.0, 100.0), JobOption(2, 1000, 1.2, 180.0))
    jobs = (EventJob("A", 100.0, 0.0, a), EventJob("B", 100.0, 0.0, b))
    return PowercapInstance(4, 4, eta, 100.0, 0.0, 0.0, jobs)


def test_printed_greedy_one_gpu_per_step_until_none_is_left():
    # Keys (Eq. 20, cluster totals at insertion). Start: both queued, JCT 100 and 200.
    # 1st GPU: both starts gain w = 0 at no energy: a tie, the lower index, A.
    # 2nd: A 1 -> 2 gains 100 (1.0 - 0.6) = 40 s for 100 (108 - 100) = 800 J; totals JCT
    #   100 + 200 = 300 s, E 10000 + 20000 = 30000 J: (40/300) / (800/30000) = 5 > B's 0.
    # 3rd: A 2 -> 3 runs on 2 GPUs still (no gain, no energy): ties with B's start, A first.
    # 4th: A 3 -> 4: 20 s for 2800 J, JCT 260, E 30800: 0.85 > B's start (no gain): A.
    # No GPU left: A on 4 GPUs (40 s), B queued (200 s): mean 120 s. The doubling greedy
    # (energyopt's default) gives A 2 GPUs and B 2 GPUs instead: (60 + 120) / 2 = 90 s.
    inst = two_jobs(1.0)
    g = printed_greedy(inst)
    assert g.config == ((4, 1000), (0, 0)) and g.gpu_steps == 4 and g.message == ""
    assert energyopt.solve(inst, "greedy-printed").objective == pytest.approx(120.0)
    assert energyopt.solve(inst, "greedy").objective == pytest.approx(90.0)


def test_printed_greedy_takes_back_the_steps_that_cross_the_cap():
    # Cap 300 W. The same four steps; line 19 checks at the node boundary (no GPU left):
    # A on 4 GPUs draws 340 W >= 300 W. The printed loop would stop there, above the cap;
    # the last step is taken back: A holds 3 GPUs and runs on 2 (180 W). Mean (60 + 200)/2.
    inst = two_jobs(0.75)
    r = energyopt.solve(inst, "greedy-printed")
    assert r.solution.config == ((2, 1000), (0, 0))
    assert r.objective == pytest.approx(130.0)
    assert "taken back" in r.message


@pytest.mark.parametrize("seed", range(12))
def test_printed_greedy_is_feasible_and_never_below_the_optimum(seed):
    inst = random_event(3, 8, 4, [0.3, 0.5, 0.8, 1.0][seed % 4], seed=seed, max_gpus=4)
    opt = energyopt.solve(inst, "bruteforce")
    r = energyopt.solve(inst, "greedy-printed")
    if opt.objective is None:
        assert r.objective is None
    else:
        assert r.objective is not None and r.objective >= opt.objective * (1 - 1e-9)
