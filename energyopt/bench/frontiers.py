"""Cross-checks of frontiers: no method's point may lie below a proven exact frontier.

A family whose methods return frontiers of (time, objective) points says through its
hooks (:attr:`energyopt.core.family.FamilyHooks.frontier_objective_at`) what a set of
points gives at a time: the one definition of "objective at a deadline" of that
family. When an exact method's frontier is proven optimal point by point, the value it
gives at a time is the optimum there, for times up to its slowest point (beyond it a
slower solution may do better, so points there are not compared). A point (T, E) of
any method with E below that value contradicts the frontier: either that method's
point or the frontier is wrong (a bug either way), and a point faster than the
frontier's fastest is infeasible or the frontier missed it.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

import numpy as np

from energyopt.bench.store import ResultsStore
from energyopt.core.family import FamilyHooks
from energyopt.core.frontiergap import bounded_frontier
from energyopt.core.instance import load_instance
from energyopt.core.registry import family_hooks, methods
from energyopt.core.result import FrontierPoint, Result
from energyopt.core.status import TerminationReason

#: Relative tolerance of the comparison.
FRONTIER_RTOL = 1e-6

#: (label, points) of one stored frontier.
Labelled = tuple[str, list[FrontierPoint]]


#: Stored frontier results by (family, instance id): (cell key, result), by cell key.
Readable = dict[tuple[str, str], list[tuple[str, Result]]]


def frontier_contradictions(store: ResultsStore, readable: Readable | None = None) -> list[str]:
    """One line per frontier point below a proven exact frontier of the same instance.

    ``readable``: the store's frontiers as :func:`read_frontier_results` gives them (read
    here when not given; the report reads them once for this and the bounds).
    """
    if readable is None:
        readable, _ = read_frontier_results(store)
    lines = []
    for (family, iid), cells in sorted(readable.items()):
        labelled = [(f"{r.method} (seed {r.seed})", r) for _, r in cells]
        # Only a frontier proven optimal point by point is a reference.
        refs = [(label, list(r.frontier)) for label, r in labelled if _proven(r)]
        text = store.instance_json(iid) if refs else None
        if text is None:
            continue
        hooks = family_hooks(family)
        instance = load_instance(text)
        name = hooks.display_name(instance)
        for ref_label, ref in refs:
            for label, r in labelled:
                if label != ref_label:
                    lines += _below(hooks, instance, f"{family} {name}", (ref_label, ref),
                                    (label, list(r.frontier)))  # fmt: skip
    return lines


def _proven(res: Result) -> bool:
    m = methods(res.family).get(res.method)
    return m is not None and m.exact and res.termination is TerminationReason.OPTIMAL


def _has_frontiers(family: Any) -> bool:
    try:
        return isinstance(family, str) and family_hooks(family).has_frontiers
    except ValueError:  # a family this installation does not know
        return False


def _below(
    hooks: FamilyHooks, instance: Any, where: str, reference: Labelled, other: Labelled
) -> list[str]:
    """The points of ``other`` below the proven frontier ``reference`` (one line each)."""
    ref_label, ref = reference
    label, pts = other
    unit = hooks.objective_unit
    t_fast = min(p.makespan_s for p in ref)
    t_slow = max(p.makespan_s for p in ref)
    lines = []
    for p in pts:
        t_s, value = p.makespan_s, p.objective
        if t_s > t_slow * (1 + FRONTIER_RTOL):
            continue  # beyond the slowest point a slower solution may do better
        best = hooks.frontier_objective_at(instance, ref, t_s)
        if not math.isfinite(best):
            if t_s < t_fast * (1 - FRONTIER_RTOL):
                lines.append(
                    f"{where}: {label} point at {t_s!r} s is faster than "
                    f"the fastest {hooks.frontier_time_name} {t_fast!r} s of {ref_label}"
                )
            continue
        if value < best - FRONTIER_RTOL * max(1.0, abs(best)):
            lines.append(
                f"{where}: {label} point ({t_s!r} s, {value!r} {unit}) below the "
                f"exact frontier of {ref_label} ({best!r} {unit} at that time)"
            )
    return lines


# -- a proven bound at every stored frontier point ---------------------------------------


@dataclasses.dataclass
class InstanceFrontiers:
    """The stored frontiers of one instance, bounded, and its bound on a time grid."""

    family: str
    instance_id: str
    name: str
    frontiers: list[tuple[str, Result]]
    """(cell key, the cell's result with a bound at every point and its summary)."""
    grid_s: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0))
    grid_bound: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0))
    """The best proven bound at ``grid_s`` (``NaN``: none), shaded in the plots."""
    instance: Any = None
    """The instance (``None`` when the store's copy is not readable)."""

    def curves(self) -> list[tuple[Result, np.ndarray]]:
        """Each frontier's objective at ``grid_s`` (the family's ``frontier_objective_at``:
        between points a frontier is not a straight line), ``inf`` where none meets it."""
        if self.instance is None:
            return []
        at = family_hooks(self.family).frontier_objective_at
        return [
            (r, np.array([at(self.instance, r.frontier, float(t)) for t in self.grid_s]))
            for _, r in self.frontiers
        ]


@dataclasses.dataclass
class StoreFrontiers:
    """Every stored frontier, bounded (:func:`store_frontiers`)."""

    instances: list[InstanceFrontiers]
    problems: list[str]
    """One line per stored result that is not a readable frontier (skipped)."""


#: Times of the bound shaded under the frontiers in the plots, per instance.
PLOT_GRID = 200


def store_frontiers(
    store: ResultsStore,
    time_limit: float | None = None,
    read: tuple[Readable, list[str]] | None = None,
) -> StoreFrontiers:
    """Every stored frontier with the best proven bound at each point.

    Per instance, the family's ``frontier_bounds`` hook gives the bound (its bound
    curve, computed once per instance here, and the stored frontiers of the family's
    exact frontier methods: docs/architecture.md); a point keeps its own bound where
    that is larger. ``time_limit`` bounds each instance's bound curve (a curve stopped
    early is looser, still valid). An instance whose bounds fail (a malformed stored
    value) keeps the points' own bounds and gets a line in ``problems``. ``read``:
    :func:`read_frontier_results` of the store, when the caller has it.
    """
    by_instance, problems = read if read is not None else read_frontier_results(store)
    problems = list(problems)
    out = []
    for (family, iid), cells in sorted(by_instance.items()):
        hooks = family_hooks(family)
        text = store.instance_json(iid)
        instance = None if text is None else _instance(text, problems, iid)
        name = iid[:8] if instance is None else hooks.display_name(instance)
        item = InstanceFrontiers(family, iid, name, cells, instance=instance)
        if instance is not None and hooks.frontier_bounds is not None:
            try:
                _bound(store, item, hooks, time_limit)
            except (TypeError, ValueError, KeyError, IndexError, AttributeError) as exc:
                problems.append(f"{family} {name}: frontier bounds skipped: "
                                f"{type(exc).__name__}: {str(exc)[:200]}")  # fmt: skip
                item.frontiers = cells
        out.append(item)
    return StoreFrontiers(out, problems)


def _bound(
    store: ResultsStore, item: InstanceFrontiers, hooks: FamilyHooks, time_limit: float | None
) -> None:
    """Bound the frontiers of ``item`` in place and take the bound on the plot grid."""
    cells, instance = item.frontiers, item.instance
    registered = methods(item.family)
    refs = [r.frontier for _, r in cells if getattr(registered.get(r.method), "exact", False)]
    pairs = _deadline_pairs(store, item.family, item.instance_id, instance,
                            hooks.positive_objective)  # fmt: skip
    item.frontiers = [
        (key, bounded_frontier(r, instance, hooks, refs, time_limit, pairs)) for key, r in cells
    ]
    lo = min(p.makespan_s for _, r in cells for p in r.frontier)
    hi = max(p.makespan_s for _, r in cells for p in r.frontier)
    item.grid_s = np.linspace(lo, hi, PLOT_GRID) if hi > lo else np.array([lo])
    item.grid_bound = hooks.frontier_bounds(instance, item.grid_s, refs, time_limit, pairs)


def _deadline_pairs(
    store: ResultsStore, family: str, iid: str, instance: Any, positive: bool
) -> list[tuple[float, float]]:
    """``(deadline, bound)`` of the stored exact one-shot cells of the instance."""
    from energyopt.core.scoring import useful_bound

    deadline = getattr(instance, "deadline_s", None)
    if deadline is None:
        return []
    registered = methods(family)
    cur = store._db.execute(
        "SELECT method, objective, bound FROM cells WHERE family = ? AND instance_id = ? "
        "AND outcome = 'finished'",
        (family, iid),
    )
    out = []
    for method, objective, bound in cur:
        m = registered.get(method)
        if m is None or not m.exact or m.frontier or not _is_number(bound):
            continue
        b = useful_bound(float(bound), positive, objective if _is_number(objective) else None)
        if b is not None:
            out.append((float(deadline), b))
    return out


def _is_number(v: Any) -> bool:
    return not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v)


def _instance(text: str, problems: list[str], iid: str) -> Any:
    try:
        return load_instance(text)
    except (ValueError, TypeError, KeyError) as exc:
        problems.append(f"instance {iid}: not readable ({exc}); frontiers keep their own bounds")
        return None


def read_frontier_results(store: ResultsStore) -> tuple[Readable, list[str]]:
    """Stored frontier results by (family, instance id), and why any cell was skipped."""
    out: Readable = {}
    problems: list[str] = []
    cur = store._db.execute(
        "SELECT cell_key, family, result_json FROM cells "
        "WHERE result_json IS NOT NULL ORDER BY cell_key"
    )
    for key, family, text in cur:
        try:
            data = json.loads(text)
        except (TypeError, ValueError, RecursionError):
            problems.append(f"cell {key}: result_json is not JSON")
            continue
        if not isinstance(data, dict):
            problems.append(f"cell {key}: result_json is a {type(data).__name__}, not an object")
            continue
        frontier = data.get("frontier")
        if not frontier:
            continue
        if not _has_frontiers(family):
            continue
        why = _malformed(frontier)
        if why:
            problems.append(f"cell {key}: {why}")
            continue
        try:
            res = Result.from_dict(data)
        except ValueError as exc:
            problems.append(f"cell {key}: {exc}")
            continue
        out.setdefault((family, res.instance_id), []).append((key, res))
    return out, problems


def _malformed(frontier: Any) -> str:
    """Why a stored frontier is not a list of points with finite numbers ("" if it is)."""
    if not isinstance(frontier, list):
        return f"frontier is a {type(frontier).__name__}, not a list"
    for i, p in enumerate(frontier):
        if not isinstance(p, dict):
            return f"frontier point {i}: a {type(p).__name__}, not an object"
        t = p.get("makespan_s", p.get("deadline_s"))
        for name, v in (("makespan_s", t), ("objective", p.get("objective"))):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                return f"frontier point {i}: {name} is not a finite number: {str(v)[:40]!r}"
        b = p.get("bound")
        if b is not None and (
            isinstance(b, bool) or not isinstance(b, (int, float)) or not math.isfinite(b)
        ):
            return f"frontier point {i}: bound is not a finite number: {str(b)[:40]!r}"
    return ""
