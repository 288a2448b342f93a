"""Tiny capacity instances whose optimum is worked out by hand in the comments.

Prices are chosen so that one joule costs exactly 1e-6 EUR:
price 3.6 EUR/kWh, PUE 1.0 -> 3.6 / 3.6e6 J/kWh = 1e-6 EUR/J.
"""

from __future__ import annotations

import pytest

from energyopt.capacity import CapacityInstance, Job, Node

PRICE = dict(energy_price_eur_per_kwh=3.6, pue=1.0)


def one_job() -> CapacityInstance:
    """One V100 node with 2 GPUs (idle 100 W, 200 W per busy GPU), one job of 1 epoch.

    (0, 1): R = 100 s, theta = 100, energy = 100 s * (100 + 200) W * 1e-6 = 0.030 EUR
    (0, 2): R =  50 s, theta =  50, energy =  50 s * (100 + 400) W * 1e-6 = 0.025 EUR
    due 1e6 s: no tardiness. Work-conserving: postponing is not allowed (2 free GPUs),
    so the optimum is (0, 2) at 0.025 EUR. Without work conservation, postponing costs
    theta = H = 1000 s of nothing and beta w max(0, 0 + 1000 + 50 - 1e6) = 0: optimum 0.
    """
    return CapacityInstance(
        (Node("v", "V100", 2, 100.0, 200.0),),
        (Job("a", 0.0, 1e6, 1e-3, 1.0, {"V100": (100.0, 50.0)}),),
        idle_horizon_s=1000.0,
        name="one-job",
        **PRICE,
    )


def two_jobs() -> CapacityInstance:
    """One node with 2 GPUs (idle 100 W, 200 W per GPU), beta = 100, w = 1e-3 EUR/s.

    j0: 1 epoch, 100 s on 1 GPU, 60 s on 2; due 80 s.  j1: 1 epoch, 40 s / 30 s; due 1000 s.
    Work-conserving schedules (a job may wait only when the node is full):
    a) j0 on 1, j1 on 1: theta = min(100, 40) = 40; energy = 40 * (100 + 400) e-6 = 0.020;
       j0 late by 100 - 80 = 20 s -> 20 * 1e-3 = 0.020; total 0.040
    b) j0 on 2, j1 waits: theta = 60; energy = 60 * 500e-6 = 0.030; j0 on time;
       j1 waits: 100 * 1e-3 * max(0, 60 + 30 - 1000) = 0; total 0.030   <- optimum
    c) j1 on 2, j0 waits: theta = 30; energy = 30 * 500e-6 = 0.015;
       j0 waits: 100 * 1e-3 * max(0, 30 + 60 - 80) = 0.1 * 10 = 1.0; total 1.015
    Non-work-conserving adds: j0 on 1, j1 waits: theta = 100, 100 * 300e-6 = 0.030
    + j0 late 20 s = 0.020 -> 0.050; j1 on 1 alone: theta 40, 0.012 + j0 waits
    0.1 * max(0, 40 + 60 - 80) = 2.0; j1 on 2 alone is (c); j0 on 2 alone is (b);
    both wait: theta = H = 1000, j0 0.1 * (1000 + 60 - 80) = 98 and j1
    0.1 * (1000 + 30 - 1000) = 3, total 101. Optimum (b) 0.030 either way.
    """
    table0 = {"V100": (100.0, 60.0)}
    table1 = {"V100": (40.0, 30.0)}
    return CapacityInstance(
        (Node("v", "V100", 2, 100.0, 200.0),),
        (
            Job("j0", 0.0, 80.0, 1e-3, 1.0, table0),
            Job("j1", 0.0, 1000.0, 1e-3, 1.0, table1),
        ),
        idle_horizon_s=1000.0,
        name="two-jobs",
        **PRICE,
    )


def keep_or_move(restart_from_checkpoint: bool = True) -> CapacityInstance:
    """Two 1-GPU V100 nodes: n0 (100 W idle + 200 W), n1 (100 W idle + 300 W).

    j0 runs on (n0, 1) with 1.5 epochs left of 100 s each, due 180 s: keeping it takes
    R = 150 s; anywhere else it restarts from its checkpoint: 2 epochs = 200 s.
    j1 waits: 1 epoch of 50 s, due 1000 s. Work-conserving (no free node may stay free
    while a job waits), so both run, one per node:
    keep: j0 n0 (150 s), j1 n1 (50 s): theta = 50; energy = 50 * (300 + 400) e-6 = 0.035;
          no tardiness; total 0.035   <- optimum
    swap: j0 n1 (200 s), j1 n0 (50 s): theta = 50; energy 0.035; j0 late 200 - 180 = 20 s
          -> 20 * 1e-3 = 0.020; total 0.055
    Without the checkpoint loss (moves free) j0 takes 150 s on n1 too: both 0.035.
    """
    return CapacityInstance(
        (Node("n0", "V100", 1, 100.0, 200.0), Node("n1", "V100", 1, 100.0, 300.0)),
        (
            Job("j0", 0.0, 180.0, 1e-3, 1.5, {"V100": (100.0,)}, running=(0, 1)),
            Job("j1", 0.0, 1000.0, 1e-3, 1.0, {"V100": (50.0,)}),
        ),
        idle_horizon_s=500.0,
        restart_from_checkpoint=restart_from_checkpoint,
        name="keep-or-move",
        **PRICE,
    )


@pytest.fixture
def tiny_one_job() -> CapacityInstance:
    return one_job()


@pytest.fixture
def tiny_two_jobs() -> CapacityInstance:
    return two_jobs()


@pytest.fixture
def tiny_keep_or_move() -> CapacityInstance:
    return keep_or_move()


def class_with_host() -> CapacityInstance:
    """Two identical 2-GPU V100 nodes (one node class, idle 100 W + 200 W per busy GPU).

    j0 runs on (n0, 1) with 0.5 epochs left (100 s/epoch on 1 GPU, 60 s on 2), due 90 s:
    kept it takes 50 s; anywhere else it restarts from its checkpoint: 1 epoch, 100 s on 1
    GPU (late by 10 s -> 10 * 1e-3 = 0.010 EUR) or 60 s on 2 (on time). So n0 is a host
    node and n1 the class's only other node. j1 waits: 1 epoch, 40 s on 1 GPU / 30 s on 2,
    due 60 s (always on time if it runs). Work-conserving: a waiting job would leave at
    least 2 of the 4 GPUs free, so both run. Energy = theta * W * 1e-6 EUR:
      j0 kept, j1 (n0, 1): theta 40, n0 500 W          -> 0.020          <- optimum
      j0 kept, j1 (n1, 1): theta 40, 300 + 300 W       -> 0.024
      j0 kept, j1 (n1, 2): theta 30, 300 + 500 W       -> 0.024
      j0 (n0 or n1, 2), j1 1 GPU on the other: 40 * 800 -> 0.032; 2 GPUs: 30 * 1000 -> 0.030
      j0 (n1, 1) + j1 (n1, 1): 40 * 500 = 0.020 + 0.010 late = 0.030
      j0 (n1, 1) + j1 on n0: 40 * 600 or 30 * 800 = 0.024, + 0.010 = 0.034
    Free postponement (beta 100): j1 alone on 2 GPUs: theta 30, 500 W -> 0.015, and j0
    waits at 100 * 1e-3 * max(0, 30 + 60 - 90) = 0 -> 0.015 (either node: a tie) <- optimum;
    j0 kept alone: 50 * 300e-6 = 0.015 + j1 waits 0.1 * (50 + 30 - 60) = 2.0; j1 alone on
    1 GPU: 40 * 300e-6 = 0.012 + j0 waits 0.1 * (40 + 60 - 90) = 1.0; both wait: theta =
    H = 1000 s, far worse.
    """
    v100 = ("V100", 2, 100.0, 200.0)
    return CapacityInstance(
        (Node("n0", *v100), Node("n1", *v100)),
        (
            Job("j0", 0.0, 90.0, 1e-3, 0.5, {"V100": (100.0, 60.0)}, running=(0, 1)),
            Job("j1", 0.0, 60.0, 1e-3, 1.0, {"V100": (40.0, 30.0)}),
        ),
        idle_horizon_s=1000.0,
        name="class-with-host",
        **PRICE,
    )
