"""The Perseus authors' published frontiers, and our frontier in their units.

The authors' optimizer (``lowtime``) plans on durations floored to a time unit:
each option's time becomes ``int(time // unit)`` units (lowtime's ``quant_time``),
the iteration time of a plan is the longest path of those floored durations, and
a frontier file lists these *planned* times (``time``) beside the energy of one
pipeline (``energy``, blocking included). The measured makespan of the same plan
is longer: every computation on its critical path runs up to one unit longer than
planned. That is the whole offset between their fastest point and ours
(docs/pipeline.md, "Against the authors' frontiers").

- :func:`read_perseus_frontier`: a frontier file, validated, and its unit.
- :func:`floored_instance`: an instance with every option time floored as lowtime does.
- :func:`planned_frontier`: plans scored in those units (planned time, energy).
- :func:`compare_with_frontier`: our least energy at or before each of their times.
"""

from __future__ import annotations

import dataclasses
import glob
import re
from pathlib import Path

import numpy as np

from energyopt.core.errors import InstanceError
from energyopt.core.validate import csv_cell, fail, number
from energyopt.pipeline.evaluator import evaluate_many
from energyopt.pipeline.instance import PemInstance
from energyopt.pipeline.options import MAX_ENERGY_J, MAX_TIME_S, OptionTable

FRONTIER_COLUMNS = ("time", "energy")
#: The most rows read from a frontier file (the published ones have up to ~4,000).
MAX_FRONTIER_ROWS = 1_000_000
#: Decimals a unit is rounded to once derived (a 1 ms step reads 0.0010000000000012).
_UNIT_DECIMALS = 9


@dataclasses.dataclass(frozen=True)
class PublishedFrontier:
    """A frontier file: planned times (s), energies (J), and the time unit (s)."""

    time_s: np.ndarray
    energy_j: np.ndarray
    unit_s: float
    path: str

    @property
    def units(self) -> np.ndarray:
        """The planned times as whole units."""
        return np.rint(self.time_s / self.unit_s).astype(np.int64)


def read_perseus_frontier(path: str | Path) -> PublishedFrontier:
    """A Perseus frontier file (``time,energy``), with the unit its times step by.

    The unit is the smallest step between two distinct times, rounded to 1e-9 s;
    every time must be a whole number of units (the authors' are 1 ms on A100,
    0.1 ms elsewhere). One-line errors name the file, the line and the field.
    """
    from energyopt.profiles.readers import read_csv_table

    path = Path(path)
    df = read_csv_table(path, FRONTIER_COLUMNS, max_rows=MAX_FRONTIER_ROWS)
    times, energies = [], []
    for idx, (t, e) in enumerate(df[list(FRONTIER_COLUMNS)].itertuples(index=False, name=None)):
        try:
            times.append(number("time", csv_cell(t), minimum=0.0, maximum=MAX_TIME_S))
            energies.append(number("energy", csv_cell(e), minimum=0.0, maximum=MAX_ENERGY_J))
        except InstanceError as exc:
            raise InstanceError(f"{path}, line {idx + 2}: {exc}") from None
    t_arr = np.asarray(times)
    steps = np.diff(np.unique(t_arr))
    steps = steps[steps > 0]
    if len(steps) == 0:
        raise InstanceError(f"{path}: time: one distinct value, no unit to derive")
    unit = round(float(steps.min()), _UNIT_DECIMALS)
    if unit <= 0:
        raise fail(f"{path}: time", float(steps.min()), "steps below 1e-9 s")
    off = np.abs(t_arr / unit - np.rint(t_arr / unit))
    if off.max() > 1e-6:
        k = int(off.argmax())
        raise InstanceError(
            f"{path}, line {k + 2}: time = {times[k]!r}: not a whole number of the "
            f"file's unit {unit:g} s"
        )
    return PublishedFrontier(t_arr, np.asarray(energies), unit, str(path))


def floored_instance(instance: PemInstance, unit_s: float) -> PemInstance:
    """``instance`` with every option time floored to ``unit_s``, as lowtime plans.

    ``int(t // unit_s) * unit_s`` (lowtime's ``quant_time``); energies unchanged.
    """
    tables = {
        name: OptionTable(
            table.sm_clock_mhz,
            tuple(float(int(t // unit_s)) * unit_s for t in table.time_s),
            table.energy_j,
        )
        for name, table in instance.tables.items()
    }
    return dataclasses.replace(instance, tables=tables, deadline_s=None)


def planned_frontier(
    instance: PemInstance, plans: np.ndarray, unit_s: float
) -> tuple[np.ndarray, np.ndarray]:
    """Plans in the authors' units: planned iteration time (whole units) and energy (J).

    The energy is the measured energy of the plan's options with blocking power up
    to its planned time for the planned idle time, as a frontier file counts it.
    """
    ev = evaluate_many(floored_instance(instance, unit_s), plans, None)
    return np.rint(ev.iteration_time_s / unit_s).astype(np.int64), ev.energy_j


@dataclasses.dataclass(frozen=True)
class FrontierComparison:
    """Ours against theirs at each of their points, in their units.

    ``ours[k]``: our least energy among plans of planned time at most their
    ``k``-th time, blocking counted up to that time (``inf`` if none);
    ``excess[k]``: ours over theirs, minus 1 (at most 0: at or below theirs).
    """

    ours: np.ndarray
    theirs: PublishedFrontier
    our_fastest_units: int

    @property
    def excess(self) -> np.ndarray:
        return self.ours / self.theirs.energy_j - 1


def compare_with_frontier(
    instance: PemInstance, plans: np.ndarray, theirs: PublishedFrontier
) -> FrontierComparison:
    """Our plans against a published frontier, both in its units (:func:`planned_frontier`)."""
    units, energy = planned_frontier(instance, plans, theirs.unit_s)
    idle_cost = instance.p_blocking_w * instance.num_stages * theirs.unit_s  # J per unit
    order = np.argsort(units, kind="stable")
    units, energy = units[order], energy[order]
    # Waiting until their time costs idle_cost per unit: the best plan finishing by t
    # minimizes energy - idle_cost * units, a running minimum over the sorted times.
    best = np.minimum.accumulate(energy - idle_cost * units)
    at = np.searchsorted(units, theirs.units, side="right") - 1
    ours = np.where(at >= 0, best[np.maximum(at, 0)] + idle_cost * theirs.units, np.inf)
    return FrontierComparison(ours, theirs, int(units[0]))


@dataclasses.dataclass(frozen=True)
class PublishedCase:
    """One (model, GPU, microbatch count) of the Perseus artifact's emulation inputs."""

    model: str
    gpu: str
    num_microbatches: int
    profile: Path
    frontier: Path
    envpipe: Path | None


_PROFILE_RE = re.compile(r"^(?P<model>[^+]+)\+(?P<gpu>.+?)(?:_(?:bf16|fp16|fp32|tf32))?\.csv$")


def published_cases(data_dir: str | Path) -> list[PublishedCase]:
    """Every profile with its frontier files in ``data_dir``, by the artifact's file names.

    ``<model>+<gpu>_<precision>.csv`` (stage profile), ``frontier_<model>_<gpu>_mb<M>.csv``
    and ``envpipe_result_<model>_<gpu>.csv``; any model, GPU and microbatch count.
    """
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        return []
    profiles = {}
    for p in sorted(data_dir.glob("*+*.csv")):
        m = _PROFILE_RE.match(p.name)
        if m:
            profiles[(m["model"], m["gpu"])] = p
    cases = []
    for (model, gpu), profile in profiles.items():
        env = data_dir / f"envpipe_result_{model}_{gpu}.csv"
        for f in sorted(data_dir.glob(f"frontier_{glob.escape(model)}_{glob.escape(gpu)}_mb*.csv")):
            m = re.fullmatch(r"mb(\d+)", f.stem.rsplit("_", 1)[-1])
            if m:
                env_path = env if env.exists() else None
                cases.append(PublishedCase(model, gpu, int(m[1]), profile, f, env_path))
    return sorted(cases, key=lambda c: (c.model, c.gpu, c.num_microbatches))


def energy_at_horizon(instance: PemInstance, choice: tuple[int, ...], horizon_s: float) -> float:
    """A plan's energy with blocking counted up to ``horizon_s``, even before its makespan.

    The authors' Table 6 charges the all-maximum-clock baseline only up to the
    frontier's fastest (planned) time, below the baseline's own makespan (data README).
    """
    t = sum(float(instance.option_times[i][k]) for i, k in enumerate(choice))
    e = sum(float(instance.option_energies[i][k]) for i, k in enumerate(choice))
    return e + instance.p_blocking_w * (instance.num_stages * horizon_s - t)


def crawl_on_their_input(instance: PemInstance, theirs: PublishedFrontier) -> np.ndarray:
    """The default crawl (``perseus``) on lowtime's input: durations floored to the unit.

    Its time step ``tau_s`` is the file's unit (lowtime's ``unit_time``), the default
    1 ms on the A100 files. Returns the frontier's plans (rows of option indices),
    to be scored by :func:`compare_with_frontier`.
    """
    from energyopt.core.registry import solve  # the registry is above this module

    res = solve(floored_instance(instance, theirs.unit_s), "perseus", tau_s=theirs.unit_s,
                progress=False)  # fmt: skip
    return np.array([p.solution.choice for p in res.frontier])
