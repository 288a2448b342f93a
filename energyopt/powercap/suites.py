"""Deterministic generated event instances: ``suite("smoke")`` and ``suite("paper")``.

Option tables come from the simulated GPU's ground truth
(:mod:`energyopt.powercap.profilegen`); every instance records the generator, its
seed and that it is simulated in ``source``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from energyopt.powercap.instance import (
    EventJobInput,
    PowercapInstance,
    event_instance,
    p_max_from_models,
)
from energyopt.powercap.measured_suite import measured_instances
from energyopt.powercap.profilegen import CLOCKS_MHZ, IDLE_POWER_W, WORKLOADS, truth_models


def random_event(
    num_jobs: int,
    num_gpus: int,
    gpus_per_node: int,
    eta: float,
    *,
    seed: int,
    clocks_mhz: tuple[int, ...] = CLOCKS_MHZ,
    max_gpus: int | None = None,
) -> PowercapInstance:
    """A scheduling event with ``num_jobs`` random jobs of the Table 1 pool (simulated).

    Remaining iterations are drawn so that one-GPU remaining times spread over about
    5 minutes to 3 hours; ages over 0-2 hours; the waiting estimate is the mean
    one-GPU remaining time at the efficient clock (as the simulator's events use).
    """
    rng = np.random.default_rng(seed)
    truth = truth_models(gpus_per_node)
    names = sorted(WORKLOADS)
    specs = []
    for i in range(num_jobs):
        w = names[int(rng.integers(len(names)))]
        bs = int(rng.choice(WORKLOADS[w].batch_sizes))
        t1, _ = truth[w].iteration(1.0, float(max(clocks_mhz)), float(bs))
        remaining_s = float(np.exp(rng.uniform(np.log(300), np.log(3 * 3600))))
        specs.append(
            EventJobInput(
                f"j{i}",
                w,
                bs,
                max(1.0, round(remaining_s / float(t1))),
                float(round(rng.uniform(0, 7200), 1)),
                max_gpus=max_gpus,
            )
        )
    pmax = p_max_from_models(truth, clocks_mhz, {w: WORKLOADS[w].batch_sizes for w in WORKLOADS})
    inst = event_instance(
        specs,
        truth,
        num_gpus=num_gpus,
        gpus_per_node=gpus_per_node,
        eta=eta,
        p_max_w=pmax,
        clocks_mhz=clocks_mhz,
        idle_power_w=IDLE_POWER_W,
    )
    wait = float(
        np.mean(
            [
                j.remaining_iterations * inst.efficient_option(k).iter_time_s
                for k, j in enumerate(inst.jobs)
            ]
        )
    )
    return PowercapInstance(
        inst.num_gpus,
        inst.gpus_per_node,
        inst.eta,
        inst.p_max_w,
        inst.idle_power_w,
        wait,
        inst.jobs,
        f"random event J{num_jobs} G{num_gpus}x{gpus_per_node} eta{eta} seed{seed}",
        f"simulated (energyopt.powercap.suites.random_event, seed={seed}; "
        "profilegen ground-truth option tables)",
    )


def suite(name: str) -> list[Any]:
    """Generated event instances, then simulation scenarios (:mod:`.simsuites`).

    ``smoke``: 4 small events (3-5 jobs, 8 GPUs, 3 clocks) every method solves in
    well under a second, brute force included. ``paper``: events at the simulator's
    scale (32 and 64 GPUs, 20-60 jobs, all 10 clocks) for the MILP and the greedy;
    then four events whose jobs come from measured profiles (Zeus V100 and A40 traces,
    ZeusMonitor A40 windows; :mod:`energyopt.powercap.measured_suite`).
    """
    from energyopt.powercap.simsuites import scenario_suite

    if name in ("smoke", "paper"):
        # Events, then the whole-trace simulation scenarios (PowercapScenario).
        return [*event_suite(name), *scenario_suite(name)]
    raise ValueError(f"unknown suite {name!r}; known: smoke, paper")


def event_suite(name: str) -> list[PowercapInstance]:
    """The suite's event instances alone."""
    if name == "smoke":
        clocks = (795, 1110, 1530)
        return [
            random_event(3, 8, 4, 0.5, seed=1, clocks_mhz=clocks, max_gpus=4),
            random_event(4, 8, 4, 0.3, seed=2, clocks_mhz=clocks, max_gpus=4),
            random_event(4, 8, 8, 0.8, seed=3, clocks_mhz=clocks, max_gpus=4),
            random_event(5, 8, 4, 1.0, seed=4, clocks_mhz=clocks, max_gpus=2),
        ]
    if name == "paper":
        out = []
        for seed, (jobs, gpus, eta) in enumerate(
            [(20, 32, 0.4), (20, 32, 0.7), (40, 32, 1.0), (40, 64, 0.5), (60, 64, 0.8)]
        ):
            out.append(random_event(jobs, gpus, 8, eta, seed=100 + seed))
        return out + measured_instances()
    raise ValueError(f"unknown suite {name!r}; known: smoke, paper")
