"""What the tuning family tells the generic layers (core.family.FamilyHooks)."""

from __future__ import annotations

from typing import Any

from energyopt.core.family import FamilyHooks
from energyopt.core.tolerance import Tolerance
from energyopt.tuning.evaluator import Evaluation, evaluate
from energyopt.tuning.instance import TuningInstance
from energyopt.tuning.policyreplay import replay_policy
from energyopt.tuning.replay import ReplayLog


def _evaluate(instance: TuningInstance, log: ReplayLog) -> Evaluation:
    """A replay's solution is its log; the evaluator checks its runs."""
    return evaluate(instance, log.runs)


def _simulate(method: Any, *, instance: TuningInstance, seed: int = 0, **options: Any) -> Any:
    """A method name is :func:`energyopt.solve`; a policy is replayed and scored the same way."""
    from energyopt.core.registry import solve

    if isinstance(method, str):
        return solve(instance, method, seed=seed, **options)
    return replay_policy(HOOKS, instance, method, seed=seed, **options)


def _report_sections(results: Any, names: Any) -> list[Any]:
    from energyopt.tuning.report import report_sections

    return report_sections(results, names)


HOOKS = FamilyHooks(
    name="tuning",
    title="Recurring-job tuning (Zeus)",
    objective_name="cumulative cost",
    objective_unit="J",
    evaluate=_evaluate,
    # A realised cost may not fall below the clairvoyant bound of its realisation at all.
    tolerance=Tolerance(rtol=1e-9, atol=0.0, unit="J"),
    plots=("zeus_regret", "regret_curves"),
    simulate=_simulate,
    # Each seed is one realisation, and the clairvoyant bound is proven on it alone.
    seeded_bound=True,
    report_sections=_report_sections,
)
