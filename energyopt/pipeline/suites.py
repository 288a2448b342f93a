"""Deterministic instance suites of the pipeline (PEM) family (``smoke`` and ``paper``).

Generated instances record their generator and seed in ``source``.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

from energyopt.core.instance import load_instance
from energyopt.pipeline.evaluator import (
    deadline_between,
    evaluate,
    fastest_choice,
    uniform_clock_choice,
)
from energyopt.pipeline.generators import random_dag_instance, synthetic_instance
from energyopt.pipeline.instance import PemInstance
from energyopt.pipeline.readers import instance_from_perseus_profile

SUITES = ("smoke", "paper")
#: P_blocking of A100 SXM used by the Perseus authors.
A100_P_BLOCKING_W = 83.64
#: Microbatch counts of Perseus Table 6 (8 stages).
TABLE6_MICROBATCHES = (12, 24, 48, 96)
ROOT = Path(__file__).resolve().parents[2]
#: Where the Perseus authors' published stage profiles are read from.
PERSEUS_DATA = ROOT / ".." / "shared" / "data" / "perseus-sosp24"
#: The measured A100 SXM profiles of the paper suite (Apache-2.0, ml-energy), in suite
#: order: the name's model tag and the file.
MEASURED_PROFILES = (
    ("gpt3-175b", "gpt3-175b+a100_sxm_bf16.csv"),
    ("bloom", "bloom+a100_sxm_bf16.csv"),
)
#: Deadlines of the measured instances, as multiples of the all-max-clock iteration time.
MEASURED_SLOWDOWNS = (1.0, 1.1)
#: Where the library keeps the instances derived from those profiles.
PAPER_LIBRARY = ROOT / "instances" / "pipeline" / "paper"


def suite(name: str) -> list[PemInstance]:
    """The instances of suite ``name`` (all generated, so the library is reproducible).

    ``smoke``
        Three tiny instances with a deadline halfway between the fastest and the
        least-energy iteration time: a synthetic 1F1B 2 x 2 with 3 clocks and two
        random 6-computation DAGs (seeds 0, 1). Every method, brute force and the
        exact frontier included, solves all of them in a few seconds.
    ``paper``
        Perseus' scales with simulated profiles (``synthetic_instance``, seed 0,
        10 clocks): 8 stages, 1F1B, 12 / 24 / 48 / 96 microbatches (Table 6),
        P_blocking 83.64 W, deadline = the iteration time with every computation
        at its fastest clock (no slowdown); and the synthetic 1F1B 4 x 8 and
        8 x 16 of the speed comparison, without a deadline; then
        :func:`measured_instances`, from the Perseus authors' measured GPT-3 175B
        and Bloom 176B profiles on A100 SXM.
    """
    if name == "smoke":
        base = [
            synthetic_instance(2, 2, 3, seed=0),
            random_dag_instance(6, 3, seed=0, deadline_fraction=None),
            random_dag_instance(6, 3, seed=1, deadline_fraction=None),
        ]
        return [inst.with_deadline(round(deadline_between(inst, 0.5), 9)) for inst in base]
    if name == "paper":
        out = []
        for M in TABLE6_MICROBATCHES:
            inst = synthetic_instance(8, M, 10, seed=0, p_blocking_w=A100_P_BLOCKING_W)
            t_fast = evaluate(inst, fastest_choice(inst), None).iteration_time_s
            out.append(inst.with_deadline(t_fast))
        out.append(synthetic_instance(4, 8, 10, seed=0))
        out.append(synthetic_instance(8, 16, 10, seed=0))
        for tag, file in MEASURED_PROFILES:
            out += measured_instances(PERSEUS_DATA / file, tag)
        return out
    raise ValueError(f"unknown suite {name!r}; known: {', '.join(SUITES)}")


def measured_instances(profile: Path, tag: str) -> list[PemInstance]:
    """A measured A100 SXM stage profile (the Perseus authors'), 8 stages, 1F1B.

    12 / 24 / 48 / 96 microbatches, P_blocking 83.64 W, deadlines at the
    all-max-clock iteration time and at 1.1 x it; named ``<tag>-a100-1f1b-8x<M>-T<s>``.
    Built from ``profile`` when it is there (``../shared/data``); otherwise the
    library's committed copies are read back, so that a clone without the data has
    the same suite.
    """
    if not profile.exists():
        return [load_instance(p) for p in sorted(PAPER_LIBRARY.glob(f"*-{tag}-a100-*.json"))]
    out = []
    for M in TABLE6_MICROBATCHES:
        base = instance_from_perseus_profile(profile, M, p_blocking_w=A100_P_BLOCKING_W)
        max_clock = max(max(c for c in t.sm_clock_mhz if c) for t in base.tables.values())
        t_max = evaluate(base, uniform_clock_choice(base, max_clock), None).iteration_time_s
        for slowdown in MEASURED_SLOWDOWNS:
            # Rounded up to the nanosecond: the all-max-clock plan must stay feasible.
            inst = base.with_deadline(math.ceil(t_max * slowdown * 1e9) / 1e9)
            out.append(
                dataclasses.replace(
                    inst,
                    name=f"{tag}-a100-1f1b-8x{M}-T{slowdown:g}",
                    source=f"measured: Perseus SOSP'24 artifact, {profile.name} "
                    "(Apache-2.0, ml-energy)",
                )
            )
    return out
