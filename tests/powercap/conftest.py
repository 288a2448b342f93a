"""Shared fixtures: hand-made tiny events and a fitted model set (simulated profiles)."""

from __future__ import annotations

import functools

import pytest

from energyopt.powercap import EventJob, JobOption, PowercapInstance


def tiny_event(b_power_1000_w: float = 50.0, b_power_2000_w: float = 95.0) -> PowercapInstance:
    """Two jobs on one node of 2 GPUs; cap = 0.5 * 2 * 100 W = 100 W; idle GPU 10 W.

    Job A: 100 iterations, age 0 s.  Job B: 50 iterations, age 10 s.  Wait estimate 100 s.
    A: (1 GPU, 1000 MHz) 1.0 s/it 40 W; (1, 2000) 0.5 s 90 W; (2, 1000) 0.6 s 80 W;
       (2, 2000) 0.3 s 170 W.
    B: (1, 1000) 2.0 s/it ``b_power_1000_w`` (50 W); (1, 2000) 1.2 s ``b_power_2000_w`` (95 W).
    """
    a = EventJob(
        "A",
        100.0,
        0.0,
        (
            JobOption(1, 1000, 1.0, 40.0),
            JobOption(1, 2000, 0.5, 90.0),
            JobOption(2, 1000, 0.6, 80.0),
            JobOption(2, 2000, 0.3, 170.0),
        ),
    )
    b = EventJob(
        "B",
        50.0,
        10.0,
        (JobOption(1, 1000, 2.0, b_power_1000_w), JobOption(1, 2000, 1.2, b_power_2000_w)),
    )
    return PowercapInstance(2, 2, 0.5, 100.0, 10.0, 100.0, (a, b), "tiny", "hand-made")


@functools.lru_cache(maxsize=1)
def _fits():
    from energyopt.powercap import fit_all, simulated_profile

    return fit_all(simulated_profile(seed=0), seed=0)


@pytest.fixture(scope="session")
def fits():
    return _fits()
