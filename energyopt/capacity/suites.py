"""Deterministic instance suites of the capacity family (``smoke`` and ``paper``).

Every instance records its generator and seed in ``source``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from energyopt.capacity.generators import job_stream, random_point, scenario_cluster
from energyopt.capacity.instance import CapacityInstance
from energyopt.capacity.simulator import simulate

SUITES = ("smoke", "paper")


def suite(name: str) -> list[Any]:
    """The rescheduling points of suite ``name`` (:func:`point_suite`), then its
    whole-stream simulation scenarios (:mod:`energyopt.capacity.simsuites`)."""
    from energyopt.capacity.simsuites import scenario_suite

    points = point_suite(name)
    return [*points, *scenario_suite(name)]


def point_suite(name: str) -> list[CapacityInstance]:
    """The rescheduling points of suite ``name``.

    ``smoke``
        Eight tiny random rescheduling points (2-3 nodes, 3-4 jobs, both
        postponement variants): every method, brute force included, solves all of
        them in a few seconds.
    ``paper``
        Rescheduling points at the paper's scales (Sec. V-B): N = 10, 50, 100 nodes,
        both scenarios, J = 10 N jobs, drawn from a FIFO-driven simulation (seed 0) at
        its 50th, 100th and 150th rescheduling point; 18 work-conserving instances.
    """
    if name == "smoke":
        out = []
        for seed in range(4):
            nodes, jobs = (2, 3) if seed % 2 == 0 else (3, 4)
            for wc in (True, False):
                point = random_point(seed, nodes, jobs, work_conserving=wc)
                # One name per instance: the two variants of a seed differ in wc only.
                variant = "work-conserving" if wc else "may-postpone"
                out.append(dataclasses.replace(point, name=f"{point.name}-{variant}"))
        return out
    if name == "paper":
        out = []
        for scenario in (1, 2):
            for n in (10, 50, 100):
                nodes = scenario_cluster(n, scenario)
                jobs = job_stream(nodes, 10 * n, seed=0)
                run = simulate(nodes, jobs, "fifo", keep_points_every=50, max_calls=151)
                for k, point in enumerate(run.points[1:], start=1):
                    out.append(
                        dataclasses.replace(
                            point,
                            name=f"paper-s{scenario}-n{n}-point{50 * k}",
                            source=(
                                "simulated: energyopt.capacity.suites paper: "
                                f"scenario_cluster({n}, {scenario}), job_stream(J={10 * n}, "
                                f"seed=0), FIFO simulation, rescheduling point {50 * k}"
                            ),
                        )
                    )
        return out
    raise ValueError(f"unknown suite {name!r}; known: {', '.join(SUITES)}")
