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

import math
from typing import Any

from energyopt.bench.store import ResultsStore
from energyopt.core.family import FamilyHooks
from energyopt.core.instance import load_instance
from energyopt.core.registry import family_hooks, methods
from energyopt.core.result import FrontierPoint

#: Relative tolerance of the comparison.
FRONTIER_RTOL = 1e-6

#: (label, points) of one stored frontier.
Labelled = tuple[str, list[FrontierPoint]]


def frontier_contradictions(store: ResultsStore) -> list[str]:
    """One line per frontier point below a proven exact frontier of the same instance."""
    exact, others = _stored_frontiers(store)
    lines = []
    for (family, iid), refs in sorted(exact.items()):
        text = store.instance_json(iid)
        if text is None:
            continue
        hooks = family_hooks(family)
        instance = load_instance(text)
        name = hooks.display_name(instance)
        for ref_label, ref in refs:
            for label, pts in others.get((family, iid), []):
                if label != ref_label:
                    lines += _below(hooks, instance, f"{family} {name}", (ref_label, ref),
                                    (label, pts))  # fmt: skip
    return lines


def _stored_frontiers(
    store: ResultsStore,
) -> tuple[dict[tuple[str, str], list[Labelled]], dict[tuple[str, str], list[Labelled]]]:
    """Proven exact frontiers and all frontiers, by (family, instance id)."""
    exact: dict[tuple[str, str], list[Labelled]] = {}
    others: dict[tuple[str, str], list[Labelled]] = {}
    for res in store.iter_results():
        family = res.get("family")
        if not res.get("frontier") or not _has_frontiers(family):
            continue
        pts = [FrontierPoint(float(p["deadline_s"]), float(p["objective"]))
               for p in res["frontier"]]  # fmt: skip
        m = methods(family).get(res["method"])
        label = f"{res['method']} (seed {res.get('seed')})"
        key = (family, res["instance_id"])
        # Only a frontier proven optimal point by point is a reference.
        if m is not None and m.exact and res.get("termination") == "optimal":
            exact.setdefault(key, []).append((label, pts))
        others.setdefault(key, []).append((label, pts))
    return exact, others


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
    t_fast = min(p.deadline_s for p in ref)
    t_slow = max(p.deadline_s for p in ref)
    lines = []
    for p in pts:
        t_s, value = p.deadline_s, p.objective
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
