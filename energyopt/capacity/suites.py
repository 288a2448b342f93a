"""Deterministic instance suites of the capacity family (``smoke`` and ``paper``).

Every instance records its generator and seed in ``source``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from energyopt.capacity.generators import job_stream, random_point, scenario_cluster
from energyopt.capacity.instance import CapacityInstance
from energyopt.capacity.measured import (
    DATA,
    measured_cluster,
    measured_job_stream,
    measured_tables,
    source_note,
    trace_types,
)
from energyopt.capacity.simulator import simulate
from energyopt.core.instance import load_instance

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
        Then :func:`measured_points`.
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
                out += _fifo_points(
                    nodes,
                    job_stream(nodes, 10 * n, seed=0),
                    f"paper-s{scenario}-n{n}",
                    "simulated: energyopt.capacity.suites paper: "
                    f"scenario_cluster({n}, {scenario}), job_stream(J={10 * n}, "
                    "seed=0), FIFO simulation",
                )
        return out + measured_points()
    raise ValueError(f"unknown suite {name!r}; known: {', '.join(SUITES)}")


#: Where the library keeps the measured points.
LIBRARY = Path(__file__).resolve().parents[2] / "instances" / "capacity" / "paper"


def measured_points(data: Path = DATA) -> list[CapacityInstance]:
    """Rescheduling points of clusters of V100 and A40 nodes whose jobs' epoch times and
    GPU power come from the Zeus traces (:mod:`energyopt.capacity.measured`).

    N = 10 and 50 nodes, J = 10 N jobs (seed 0), FIFO simulation, points 50, 100, 150.
    Built from ``data`` when it holds traces; otherwise the library's committed copies
    are read back, so that a clone without the data has the same suite.
    """
    if not trace_types(data):
        return [load_instance(p) for p in sorted(LIBRARY.glob("*-measured-*.json"))]
    times, power = measured_tables(data)
    out = []
    for n in (10, 50):
        nodes = measured_cluster(n, power)
        out += _fifo_points(
            nodes,
            measured_job_stream(nodes, times, 10 * n, seed=0),
            f"measured-n{n}",
            f"{source_note(data)}; energyopt.capacity.suites.measured_points: "
            f"measured_cluster({n}), measured_job_stream(J={10 * n}, seed=0), FIFO simulation",
        )
    return out


def _fifo_points(nodes: tuple, jobs: tuple, name: str, source: str) -> list[CapacityInstance]:
    """Rescheduling points 50, 100 and 150 of a FIFO simulation, named and sourced."""
    run = simulate(nodes, jobs, "fifo", keep_points_every=50, max_calls=151)
    return [
        dataclasses.replace(
            point,
            name=f"{name}-point{50 * k}",
            source=f"{source}, rescheduling point {50 * k}",
        )
        for k, point in enumerate(run.points[1:], start=1)
    ]
