"""What a family tells the generic layers (scoring, bench, report) about itself.

Each family module ``energyopt/<family>/hooks.py`` defines ``HOOKS``, a
:class:`FamilyHooks`. The registry finds the families by those modules
(:func:`energyopt.core.registry.families`) and hands their hooks out
(:func:`energyopt.core.registry.family_hooks`); the bench and the report ask the
hooks for everything family-specific, so they name no family themselves.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from energyopt.core.evaluation import Evaluation
from energyopt.core.result import FrontierPoint
from energyopt.core.tolerance import Tolerance


def default_display_name(instance: Any) -> str:
    """The instance's ``name``, or the first 8 characters of its id without one."""
    return getattr(instance, "name", "") or instance.instance_id[:8]


@dataclasses.dataclass(frozen=True)
class FamilyHooks:
    """One family's answers to the generic layers.

    Attributes
    ----------
    name
        The family's name (``instance.family``, ``Result.family``).
    title
        A human title for reports (``"Pipeline energy minimization (PEM)"``).
    objective_name, objective_unit
        What the objective is and its unit (``"energy"``, ``"J"``).
    evaluate
        ``evaluate(instance, solution) -> Evaluation``: the independent checker.
    tolerance
        How far a solver's objective (or a bound) may stray from the evaluator's.
    positive_objective
        The objective is >= 0 by construction: a bound <= 0 under a positive
        objective says nothing (it is dropped).
    display_name
        ``display_name(instance) -> str`` for tables and plots.
    frontier_objective_at
        For families whose methods return frontiers of (time, objective) points:
        ``frontier_objective_at(instance, points, time_s)``, the best objective the
        points give at that time (``inf`` when none meets it). ``None`` otherwise.
    frontier_time_name
        What a frontier point's time is (axis label).
    frontier_bounds
        ``frontier_bounds(instance, times, references, time_limit, at_deadlines) ->
        array``: the best proven lower bound on the objective at each time (``NaN``
        where none), for families with frontiers; ``references`` are exact frontiers of
        the instance, ``at_deadlines`` ``(deadline, bound)`` pairs of exact one-shot
        solves (:mod:`energyopt.core.frontiergap`). ``None`` otherwise.
    plots
        Names of the :mod:`energyopt.plot` functions that apply to this family's
        results besides the generic ones (gap distribution, performance profiles,
        heatmap).
    simulate
        ``simulate(method_or_policy, **scenario)``: the family's discrete-event
        simulator (:func:`energyopt.core.simulation.simulate`); ``None`` without one.
    method_applies
        ``method_applies(instance, method) -> bool``: whether ``method`` runs on this
        instance, for a family with more than one kind of instance (an event and a
        whole-trace simulation); the bench plans, and :func:`energyopt.solve` accepts,
        only those. ``None``: every method applies to every instance.
    seeded_bound
        A result's bound holds for its own seed only (it is proven on the random
        realisation that seed draws, as the tuning replays' clairvoyant bound): the
        report takes the best bound per (instance, seed), not per instance.
    report_sections
        ``report_sections(results, names) -> list[ReportSection]``
        (:class:`energyopt.core.sections.ReportSection`): the family's own part of the
        report, from its finished results (``Result`` objects) and the instances' display
        names (instance id -> name); ``None`` without one.
    """

    name: str
    title: str
    objective_name: str
    objective_unit: str
    evaluate: Callable[[Any, Any], Evaluation]
    tolerance: Tolerance
    positive_objective: bool = True
    display_name: Callable[[Any], str] = default_display_name
    frontier_objective_at: Callable[[Any, Sequence[FrontierPoint], float], float] | None = None
    frontier_time_name: str = "time"
    frontier_bounds: Callable[..., Any] | None = None
    plots: tuple[str, ...] = ()
    simulate: Callable[..., Any] | None = None
    method_applies: Callable[[Any, str], bool] | None = None
    seeded_bound: bool = False
    report_sections: Callable[[Sequence[Any], Mapping[str, str]], list[Any]] | None = None

    @property
    def has_frontiers(self) -> bool:
        return self.frontier_objective_at is not None
