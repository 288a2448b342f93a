"""What every family's independent evaluator returns: the :class:`Evaluation` protocol.

Each family names its objective in its own terms (energy in J for PEM, cost in EUR
for capacity, mean JCT in s for powercap, cumulative cost in J for tuning) and
keeps those attribute names (``energy_j``, ``mean_jct_s``, ``total_cost``). Besides
them every evaluation answers the same four questions, so that the one scorer
(:func:`energyopt.core.scoring.score`) and the reports treat all families alike:

``objective``
    The value a method is ranked by (lower is better), in ``objective_unit``.
``feasible`` / ``violations``
    Whether the decisions are valid, and why not (one line each).
``figures()``
    Further named figures with their units (``{"iteration_time_s": Figure(1.2, "s")}``),
    stored in ``Result.extra`` under their names.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable


@dataclasses.dataclass(frozen=True)
class Figure:
    """A named figure's value and unit (``""`` for counts and ratios)."""

    value: Any
    unit: str = ""


@runtime_checkable
class Evaluation(Protocol):
    """What an evaluator says of one solution (see the module docstring)."""

    feasible: bool
    violations: tuple[str, ...]

    @property
    def objective(self) -> float:
        """The objective, in the family's objective unit; lower is better."""
        ...

    def figures(self) -> Mapping[str, Figure]:
        """Further named figures (unit suffix in the name where one applies)."""
        ...


@dataclasses.dataclass(frozen=True)
class Scored:
    """A plain :class:`Evaluation`: for values computed elsewhere (an expectation, a test).

    ``extra`` holds figures without units; they are stored in ``Result.extra``.
    """

    objective: float
    feasible: bool = True
    violations: tuple[str, ...] = ()
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    def figures(self) -> dict[str, Figure]:
        return {name: Figure(value) for name, value in self.extra.items()}


def figure_values(evaluation: Evaluation) -> dict[str, Any]:
    """``{name: value}`` of an evaluation's figures (what goes into ``Result.extra``)."""
    return {name: fig.value for name, fig in evaluation.figures().items()}
