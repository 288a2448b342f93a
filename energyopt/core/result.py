"""The result of one method on one instance."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from energyopt.core.gap import gap
from energyopt.core.status import SolutionStatus, TerminationReason

if TYPE_CHECKING:
    import pandas as pd

    from energyopt.core.tolerance import Tolerance


@dataclasses.dataclass(frozen=True)
class FrontierPoint:
    """One point of a time-energy frontier: a plan's makespan, its energy, the decisions.

    Attributes
    ----------
    makespan_s
        The plan's iteration time (its makespan); the point serves every deadline at
        or above it.
    objective
        The energy at that makespan.
    solution
        The plan.
    bound
        A proven lower bound on the energy at that makespan, when known.
    """

    makespan_s: float
    objective: float
    solution: Any = None
    bound: float | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FrontierPoint:
        """A point from :meth:`Result.to_dict`'s ``frontier`` entries (solution as stored)."""
        t = data["makespan_s"] if "makespan_s" in data else data["deadline_s"]
        bound = data.get("bound")
        return cls(float(t), float(data["objective"]), data.get("solution"),
                   None if bound is None else float(bound))  # fmt: skip


@dataclasses.dataclass(frozen=True)
class Result:
    """What any method returns.

    Attributes
    ----------
    family
        Problem family (``"pipeline"``, ``"capacity"``, ``"powercap"``, ``"tuning"``).
    instance_id
        Content hash of the instance (see ``Instance.instance_id``).
    method
        Registered method name.
    termination
        Why the method stopped.
    status
        What the method has to show.
    objective
        The evaluator's objective of ``solution``; ``None`` without a solution.
    bound
        Proven lower bound (exact methods); ``None`` when none is known, never 0.
    runtime_s
        Wall-clock seconds of the method, model building included.
    solver
        Name of the underlying solver (``"highs"``, ``"cp-sat"``, ``"python"``).
    solver_version
        Its version string.
    options
        The options the method ran with.
    seed
        Random seed (``None`` for deterministic methods).
    solution
        The decisions, in the family's own solution type.
    frontier
        For frontier methods: the points, fastest first.
    message
        Free text: error message, notes.
    extra
        Method-specific figures (node counts, iterations, ...).
    """

    family: str
    instance_id: str
    method: str
    termination: TerminationReason
    status: SolutionStatus
    objective: float | None = None
    bound: float | None = None
    runtime_s: float = 0.0
    solver: str = "python"
    solver_version: str = ""
    options: dict[str, Any] = dataclasses.field(default_factory=dict)
    seed: int | None = None
    solution: Any = None
    frontier: tuple[FrontierPoint, ...] = ()
    message: str = ""
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def gap(self) -> float | None:
        """Gap of ``objective`` against this result's own ``bound`` (see :func:`gap`)."""
        return gap(self.objective, self.bound)

    def __str__(self) -> str:
        """One line: method, instance, termination (status), objective, bound, gap, time."""

        def num(x: float | None) -> str:
            return "none" if x is None else f"{x:.6g}"

        g = self.gap
        return (
            f"{self.family}/{self.method} on {self.instance_id}: {self.termination} "
            f"({self.status}), objective {num(self.objective)}, bound {num(self.bound)}, "
            f"gap {'none' if g is None else f'{100 * g:.4g} %'}, {self.runtime_s:.3g} s"
        )

    @property
    def has_solution(self) -> bool:
        return self.status in (SolutionStatus.OPTIMAL, SolutionStatus.FEASIBLE)

    @property
    def frontier_summary(self) -> dict[str, Any] | None:
        """The frontier against its bounds (``None`` without a frontier).

        The full summary (:func:`energyopt.core.frontiergap.frontier_summary`: gaps over
        the points, shares of the time range within 0.1/0.5/1 %, area ratio) once the
        frontier was bounded (``energyopt.compare``, ``energyopt solve``, the bench
        report); otherwise the gaps over the points from the bounds they carry.
        """
        if not self.frontier:
            return None
        stored = self.extra.get("frontier_summary")
        if isinstance(stored, Mapping):
            return dict(stored)
        return point_gaps(self.frontier)

    def to_dict(self, *, full_frontier: bool = True) -> dict[str, Any]:
        """A JSON-ready dictionary (solutions through their ``to_dict`` when they have one).

        ``full_frontier=False``: the frontier as ``frontier_points`` (a count) and
        ``frontier_summary`` instead of every point and its plan (a Perseus frontier of
        GPT-3 8x96 is 73 MB of JSON); :meth:`from_dict` reads it with no frontier.
        """
        if not full_frontier:
            out = self.to_dict_without_frontier()
            out["extra"].pop("frontier_summary", None)
            out["frontier_points"] = len(self.frontier)
            out["frontier_summary"] = _jsonable(self.frontier_summary)
            return out
        return {
            "family": self.family,
            "instance_id": self.instance_id,
            "method": self.method,
            "termination": self.termination.value,
            "status": self.status.value,
            "objective": _num(self.objective),
            "bound": _num(self.bound),
            "gap": _num(self.gap),
            "runtime_s": self.runtime_s,
            "solver": self.solver,
            "solver_version": self.solver_version,
            "options": _jsonable(self.options),
            "seed": self.seed,
            "solution": _jsonable(self.solution),
            "frontier": [
                {
                    "makespan_s": p.makespan_s,
                    # The former name, still read by stores and frames written before.
                    "deadline_s": p.makespan_s,
                    "objective": p.objective,
                    "bound": _num(p.bound),
                    "solution": _jsonable(p.solution),
                }
                for p in self.frontier
            ],
            "message": self.message,
            "extra": _jsonable(self.extra),
        }

    def to_dict_without_frontier(self) -> dict[str, Any]:
        """:meth:`to_dict` with an empty ``frontier`` (no point is converted)."""
        return dataclasses.replace(self, frontier=()).to_dict()

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Result:
        """The :class:`Result` that :meth:`to_dict` wrote (a stored record, a JSON line).

        Enumerations, numbers and frontier points come back typed; ``solution`` (and
        each point's) stays the stored JSON data: the family's solution type is
        rebuilt by the family (e.g. ``PemSolution.from_dict``), not here. ``gap`` is
        recomputed from ``objective`` and ``bound``.

        Raises
        ------
        ValueError
            A missing field or a value of the wrong type, naming the field.
        """
        try:
            return cls(
                family=str(data["family"]),
                instance_id=str(data["instance_id"]),
                method=str(data["method"]),
                termination=TerminationReason(data["termination"]),
                status=SolutionStatus(data["status"]),
                objective=_opt_float(data.get("objective")),
                bound=_opt_float(data.get("bound")),
                runtime_s=float(data.get("runtime_s") or 0.0),
                solver=str(data.get("solver", "python")),
                solver_version=str(data.get("solver_version", "")),
                options=dict(data.get("options") or {}),
                seed=None if data.get("seed") is None else int(data["seed"]),
                solution=data.get("solution"),
                frontier=tuple(FrontierPoint.from_dict(p) for p in data.get("frontier") or ()),
                message=str(data.get("message", "")),
                extra=dict(data.get("extra") or {}),
            )
        except KeyError as exc:
            raise ValueError(f"result record: field {exc.args[0]!r} is missing") from None
        except (TypeError, ValueError) as exc:
            raise ValueError(f"result record: {exc}") from None

    def to_frame(self) -> pd.DataFrame:
        """One-row tidy DataFrame: the scalar fields (no solution, frontier or extra).

        Indexed by (``instance_id``, ``method``, ``seed``), so that ``pd.concat`` of
        several results keeps them apart (``reset_index()`` makes them columns again).
        ``objective``, ``bound``, ``gap`` and ``runtime_s`` are floats, ``NaN`` where
        there is none; ``seed`` is a nullable integer. Enumerations are their string
        values; ``options`` is JSON text.
        """
        import pandas as pd

        d = self.to_dict()
        row = {k: d[k] for k in _FRAME_COLUMNS}
        for k in ("objective", "bound", "gap", "runtime_s"):
            row[k] = _nan(row[k])
        row["options"] = json.dumps(d["options"], sort_keys=True)
        row["frontier_points"] = len(self.frontier)
        df = pd.DataFrame([row]).astype({"seed": "Int64"})
        return df.set_index(["instance_id", "method", "seed"])

    def frontier_frame(self) -> pd.DataFrame:
        """The frontier as a tidy DataFrame, fastest point first.

        Columns: ``method``, ``deadline_s``, ``energy_j``, ``bound_j`` (the proven lower
        bound at that deadline, ``NaN`` where none is known) and ``gap`` (a fraction).
        Frontiers are time-energy frontiers (the ``pipeline`` family), hence the units.
        """
        import pandas as pd

        rows = [
            {
                "method": self.method,
                "deadline_s": float(p.makespan_s),
                "energy_j": _nan(p.objective),
                "bound_j": _nan(p.bound),
                "gap": _nan(gap(p.objective, p.bound)),
            }
            for p in self.frontier
        ]
        cols = ["method", "deadline_s", "energy_j", "bound_j", "gap"]
        return pd.DataFrame(rows, columns=cols).sort_values("deadline_s", ignore_index=True)

    def __repr__(self) -> str:
        return (
            f"Result(family={self.family!r}, method={self.method!r}, "
            f"termination={self.termination.value!r}, status={self.status.value!r}, "
            f"objective={self.objective!r}, bound={self.bound!r}, "
            f"runtime_s={self.runtime_s:.3f})"
        )


#: The scalar columns of :meth:`Result.to_frame`, in order.
_FRAME_COLUMNS = (
    "family", "instance_id", "method", "termination", "status", "objective", "bound", "gap",
    "runtime_s", "solver", "solver_version", "seed", "message",
)  # fmt: skip


def _opt_float(x: Any) -> float | None:
    if x is None:
        return None
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise TypeError(f"expected a number, got {x!r}")
    return float(x)


def point_gaps(
    points: Sequence[FrontierPoint], tolerance: Tolerance | None = None
) -> dict[str, Any]:
    """The gaps of frontier points against the bounds they carry.

    Keys ``points``, ``points_with_bound``, ``below_bound``, ``gap_max``, ``gap_mean``
    and ``gap_median`` (``None`` where no point has a bound). A point is below its
    bound when its objective lies under it by more than ``tolerance`` (without one: a
    negative :func:`~energyopt.core.gap.gap`).
    """
    gaps = [g for g in (gap(p.objective, p.bound) for p in points) if g is not None]
    if tolerance is None:
        below = sum(1 for g in gaps if g < 0)
    else:
        below = sum(
            1 for p in points
            if p.bound is not None and p.objective < p.bound
            and not tolerance.allows(p.objective, p.bound)
        )  # fmt: skip
    return {
        "points": len(points),
        "points_with_bound": sum(1 for p in points if p.bound is not None),
        "below_bound": below,
        "gap_max": max(gaps) if gaps else None,
        "gap_mean": math.fsum(gaps) / len(gaps) if gaps else None,
        "gap_median": _median(gaps),
    }


def _median(xs: list[float]) -> float | None:
    if not xs:
        return None
    s = sorted(xs)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else 0.5 * (s[mid - 1] + s[mid])


def _nan(x: float | None) -> float:
    return math.nan if x is None else float(x)


def _num(x: float | None) -> float | None:
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _jsonable(obj: Any) -> Any:
    if obj is None or isinstance(obj, (str, bool, int)):
        return obj
    if isinstance(obj, float):
        return _num(obj)
    if hasattr(obj, "to_dict"):
        return _jsonable(obj.to_dict())
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return _jsonable(dataclasses.asdict(obj))
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        # Plans are long lists of option indices (a frontier of GPT-3 8x96 holds 11,000
        # of 1,536 each): one type check each, not one call each.
        if all(type(v) is int for v in obj):
            return list(obj)
        return [_jsonable(v) for v in obj]
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if hasattr(obj, "item"):
        return obj.item()
    return str(obj)
