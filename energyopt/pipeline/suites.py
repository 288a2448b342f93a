"""Deterministic instance suites of the pipeline (PEM) family (``smoke`` and ``paper``).

Generated instances record their generator and seed in ``source``.
"""

from __future__ import annotations

from pathlib import Path

from energyopt.pipeline.evaluator import deadline_between, evaluate, uniform_clock_choice
from energyopt.pipeline.generators import random_dag_instance, synthetic_instance
from energyopt.pipeline.instance import PemInstance
from energyopt.pipeline.readers import instance_from_perseus_profile

SUITES = ("smoke", "paper")
#: The published GPT-3 175B A100 profile (Perseus artifact), relative to the repository.
GPT3_PROFILE = (
    Path(__file__).resolve().parents[2]
    / ".."
    / "shared"
    / "data"
    / "perseus-sosp24"
    / "gpt3-175b+a100_sxm_bf16.csv"
)
#: P_blocking of A100 SXM used by the Perseus authors.
A100_P_BLOCKING_W = 83.64
#: Microbatch counts of Perseus Table 6 (8 stages).
TABLE6_MICROBATCHES = (12, 24, 48, 96)


def suite(name: str) -> list[PemInstance]:
    """The instances of suite ``name``.

    ``smoke``
        Three tiny instances with a deadline halfway between the fastest and the
        least-energy iteration time: a synthetic 1F1B 2 x 2 with 3 clocks and two
        random 6-computation DAGs (seeds 0, 1). Every method, brute force and the
        exact frontier included, solves all of them in a few seconds.
    ``paper``
        Perseus' scales: GPT-3 175B on A100 (the authors' profile, when
        ``../shared/data/perseus-sosp24`` is present; otherwise simulated 8-stage
        profiles of the same shape, seed 0), 8 stages, 1F1B, 12 / 24 / 48 / 96
        microbatches, P_blocking 83.64 W, deadline = iteration time with every
        computation at 1410 MHz (Table 6: no slowdown); and the synthetic 1F1B
        4 x 8 and 8 x 16 with 10 clocks (seed 0) of the speed comparison, without
        a deadline.
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
            if GPT3_PROFILE.exists():
                inst = instance_from_perseus_profile(
                    GPT3_PROFILE, M, p_blocking_w=A100_P_BLOCKING_W
                )
            else:
                inst = synthetic_instance(8, M, 10, seed=0, p_blocking_w=A100_P_BLOCKING_W)
            t_max_clock = evaluate(inst, uniform_clock_choice(inst, 1410), None).iteration_time_s
            out.append(inst.with_deadline(t_max_clock))
        out.append(synthetic_instance(4, 8, 10, seed=0))
        out.append(synthetic_instance(8, 16, 10, seed=0))
        return out
    raise ValueError(f"unknown suite {name!r}; known: {', '.join(SUITES)}")
