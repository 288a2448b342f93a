"""Deterministic instance suites of the pipeline (PEM) family (``smoke`` and ``paper``).

Generated instances record their generator and seed in ``source``.
"""

from __future__ import annotations

from energyopt.pipeline.evaluator import deadline_between, evaluate, fastest_choice
from energyopt.pipeline.generators import random_dag_instance, synthetic_instance
from energyopt.pipeline.instance import PemInstance

SUITES = ("smoke", "paper")
#: P_blocking of A100 SXM used by the Perseus authors.
A100_P_BLOCKING_W = 83.64
#: Microbatch counts of Perseus Table 6 (8 stages).
TABLE6_MICROBATCHES = (12, 24, 48, 96)


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
        8 x 16 of the speed comparison, without a deadline. The measured GPT-3
        175B profile of the Perseus authors is read with
        ``instance_from_perseus_profile`` (see ``docs/pipeline.md``).
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
        return out
    raise ValueError(f"unknown suite {name!r}; known: {', '.join(SUITES)}")
