"""A recurring training job as replayed from a trace: :class:`TuningInstance`.

The instance holds everything the trace-driven replay of Zeus (paper Sec. 6.1)
needs, and nothing a policy may read beyond what it could measure online:

* the power table: seconds per epoch and mean watts for every (batch size,
  power limit) pair (the Zeus ``summary_power_<gpu>.csv``);
* the training paths: for every batch size, the epochs that each recorded
  training run needed to reach the target metric, ``None`` when it never did
  (the Zeus ``summary_train.csv`` at one target metric);
* the knobs of the experiment: ``eta`` (Eq. 2), ``beta`` (early stopping),
  the default batch size ``b0``, ``max_epochs`` and the number of recurrences.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar

from energyopt.core import validate as V
from energyopt.core.instance import InstanceBase, check, finite_nonneg
from energyopt.tuning.cost import check_eta, epoch_cost


@dataclasses.dataclass(frozen=True)
class TuningInstance(InstanceBase):
    """A recurring DNN training job, its power table and its training paths.

    Attributes
    ----------
    name
        Workload name, e.g. ``"librispeech/deepspeech2"``.
    gpu
        GPU the power table was measured on (``"v100"``, ``"a40"``, ``"simulated"``).
    batch_sizes
        The feasible set B, ascending.
    power_limits_w
        The feasible set P in watts, ascending.
    default_batch_size
        b0, the batch size of the Default baseline and the start of pruning.
    epoch_time_s
        ``epoch_time_s[i][j]``: seconds per epoch at ``batch_sizes[i]`` and
        ``power_limits_w[j]``.
    avg_power_w
        ``avg_power_w[i][j]``: mean GPU power over an epoch, watts.
    target_epochs
        ``target_epochs[i]``: one entry per recorded training run at
        ``batch_sizes[i]``: the epoch at which it reached the target metric,
        or ``None`` when it never did.
    eta
        Energy weight of the cost metric (Eq. 2), in [0, 1].
    beta
        Early-stopping threshold factor (a run stops once its cost would exceed
        ``beta`` times the smallest recurrence cost seen); ``None`` disables it.
    recurrences
        Number of recurrences T of the job.
    max_epochs
        A run that has not reached the target after this many epochs stops.
    max_power_w
        MAXPOWER of Eq. 2; defaults to the largest power limit.
    source
        Where the data came from (trace files, or generator name and seed).
    """

    family: ClassVar[str] = "tuning"

    name: str
    gpu: str
    batch_sizes: tuple[int, ...]
    power_limits_w: tuple[float, ...]
    default_batch_size: int
    epoch_time_s: tuple[tuple[float, ...], ...]
    avg_power_w: tuple[tuple[float, ...], ...]
    target_epochs: tuple[tuple[int | None, ...], ...]
    eta: float = 0.5
    beta: float | None = 2.0
    recurrences: int = 0
    max_epochs: int = 100
    max_power_w: float = 0.0
    source: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(
            self,
            "batch_sizes",
            tuple(V.integer("batch_sizes", b, minimum=1) for b in self.batch_sizes),
        )
        powers = tuple(V.positive("power_limits_w", p) for p in self.power_limits_w)
        set_(self, "power_limits_w", powers)
        nb, npl = len(self.batch_sizes), len(self.power_limits_w)
        check(nb > 0, "batch_sizes", self.batch_sizes, "must not be empty")
        check(npl > 0, "power_limits_w", self.power_limits_w, "must not be empty")
        check(
            list(self.batch_sizes) == sorted(set(self.batch_sizes)),
            "batch_sizes",
            self.batch_sizes,
            "must be strictly ascending",
        )
        check(
            list(self.power_limits_w) == sorted(set(self.power_limits_w)),
            "power_limits_w",
            self.power_limits_w,
            "must be strictly ascending",
        )
        set_(self, "default_batch_size", V.integer("default_batch_size", self.default_batch_size))
        check(
            self.default_batch_size in self.batch_sizes,
            "default_batch_size",
            self.default_batch_size,
            f"not one of batch_sizes {self.batch_sizes}",
        )
        set_(self, "epoch_time_s", _grid("epoch_time_s", self.epoch_time_s, nb, npl, self))
        set_(self, "avg_power_w", _grid("avg_power_w", self.avg_power_w, nb, npl, self))
        check(
            len(self.target_epochs) == nb,
            "target_epochs",
            f"{len(self.target_epochs)} rows",
            f"expected one row per batch size ({nb})",
        )
        paths = []
        for i, row in enumerate(self.target_epochs):
            b = self.batch_sizes[i]
            check(len(row) > 0, f"target_epochs[b={b}]", row, "needs at least one training run")
            clean: list[int | None] = []
            for e in row:
                if e is None or (isinstance(e, float) and math.isnan(e)):
                    clean.append(None)  # documented: NaN target epoch = never reached
                    continue
                x = finite_nonneg(f"target_epochs[b={b}]", e)
                check(x >= 1 and x == int(x), f"target_epochs[b={b}]", e, "must be an integer >= 1")
                clean.append(int(x))
            paths.append(tuple(clean))
        set_(self, "target_epochs", tuple(paths))
        set_(self, "eta", check_eta(self.eta))
        if self.beta is not None:
            beta = finite_nonneg("beta", self.beta)
            check(beta >= 1.0, "beta", self.beta, "must be >= 1 (or None to disable)")
            set_(self, "beta", beta)
        set_(self, "recurrences", V.integer("recurrences", self.recurrences, minimum=0))
        if self.recurrences == 0:  # 0 asks for 2 x |B| x |P|, the paper's choice
            set_(self, "recurrences", 2 * nb * npl)
        set_(self, "max_epochs", V.integer("max_epochs", self.max_epochs, minimum=1))
        mp = finite_nonneg("max_power_w", self.max_power_w)
        set_(self, "max_power_w", mp if mp > 0 else max(self.power_limits_w))
        set_(self, "source", dict(self.source))

    # -- derived quantities -------------------------------------------------
    def index_of_batch(self, batch_size: int) -> int:
        """Row of ``batch_size`` in the tables; ValueError when it is not in B."""
        try:
            return self.batch_sizes.index(int(batch_size))
        except ValueError:
            raise ValueError(f"batch size {batch_size} not in {self.batch_sizes}") from None

    def index_of_power(self, power_limit_w: float) -> int:
        """Column of ``power_limit_w`` in the tables; ValueError when it is not in P."""
        try:
            return self.power_limits_w.index(float(power_limit_w))
        except ValueError:
            raise ValueError(
                f"power limit {power_limit_w} W not in {self.power_limits_w}"
            ) from None

    def epoch_cost(self, batch_size: int, power_limit_w: float) -> float:
        """Cost of one epoch of ``batch_size`` at ``power_limit_w`` (the term of Eq. 7)."""
        i, j = self.index_of_batch(batch_size), self.index_of_power(power_limit_w)
        return epoch_cost(
            self.epoch_time_s[i][j], self.avg_power_w[i][j], self.eta, self.max_power_w
        )

    # -- serialization ------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "family": self.family,
            "version": self.format_version,
            "name": self.name,
            "gpu": self.gpu,
            "batch_sizes": list(self.batch_sizes),
            "power_limits_w": list(self.power_limits_w),
            "default_batch_size": self.default_batch_size,
            "epoch_time_s": [list(r) for r in self.epoch_time_s],
            "avg_power_w": [list(r) for r in self.avg_power_w],
            "target_epochs": [list(r) for r in self.target_epochs],
            "eta": self.eta,
            "beta": self.beta,
            "recurrences": self.recurrences,
            "max_epochs": self.max_epochs,
            "max_power_w": self.max_power_w,
            "source": self.source,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TuningInstance:
        """Read an instance from its JSON object, strictly (``core.validate``).

        Batch sizes and epochs are integers (``2.0`` reads as 2, ``2.5`` and ``"2"`` are
        errors); a bool is never a number; a never-reached target epoch is ``null``.
        """
        V.version(data)
        V.fields(data, "tuning instance", required=_REQUIRED, optional=_OPTIONAL)
        batch_sizes = [
            V.integer(f"batch_sizes[{i}]", b, minimum=1)
            for i, b in enumerate(V.sequence("batch_sizes", data["batch_sizes"], nonempty=True))
        ]
        powers = [
            V.positive(f"power_limits_w[{j}]", p)
            for j, p in enumerate(
                V.sequence("power_limits_w", data["power_limits_w"], nonempty=True)
            )
        ]
        beta = data.get("beta", 2.0)
        return cls(
            name=V.string("name", data["name"], nonempty=False),
            gpu=V.string("gpu", data["gpu"]),
            batch_sizes=tuple(batch_sizes),
            power_limits_w=tuple(powers),
            default_batch_size=V.integer("default_batch_size", data["default_batch_size"]),
            epoch_time_s=_grid_from_json("epoch_time_s", data["epoch_time_s"], batch_sizes),
            avg_power_w=_grid_from_json("avg_power_w", data["avg_power_w"], batch_sizes),
            target_epochs=_paths_from_json(data["target_epochs"], batch_sizes),
            eta=V.number("eta", data.get("eta", 0.5), minimum=0.0, maximum=1.0),
            beta=None if beta is None else V.number("beta", beta, minimum=1.0),
            recurrences=V.integer("recurrences", data.get("recurrences", 0), minimum=0),
            max_epochs=V.integer("max_epochs", data.get("max_epochs", 100), minimum=1),
            max_power_w=_max_power(data),
            source=V.mapping("source", data.get("source", {})),
        )

    def with_knobs(self, **changes: Any) -> TuningInstance:
        """A copy with other experiment knobs (``eta``, ``beta``, ``recurrences``, ...)."""
        return dataclasses.replace(self, **changes)


_REQUIRED = (
    "family",
    "name",
    "gpu",
    "batch_sizes",
    "power_limits_w",
    "default_batch_size",
    "epoch_time_s",
    "avg_power_w",
    "target_epochs",
)
_OPTIONAL = ("version", "eta", "beta", "recurrences", "max_epochs", "max_power_w", "source")


def _row_name(field: str, i: int, batch_sizes: list[int]) -> str:
    """``field[b=64]`` for the row of batch size 64 (``field[i]`` past the last one)."""
    return f"{field}[b={batch_sizes[i]}]" if i < len(batch_sizes) else f"{field}[{i}]"


def _max_power(data: dict[str, Any]) -> float:
    """MAXPOWER; absent means the largest power limit (0 is the Python API's sentinel)."""
    if "max_power_w" not in data:
        return 0.0
    return V.positive("max_power_w", data["max_power_w"])


def _grid_from_json(field: str, raw: Any, batch_sizes: list[int]) -> tuple[tuple[float, ...], ...]:
    """A (batch size x power limit) table of JSON numbers; shapes are checked later."""
    rows = V.sequence(field, raw)
    out = []
    for i, row in enumerate(rows):
        where = _row_name(field, i, batch_sizes)
        vals = V.sequence(where, row)
        out.append(tuple(V.number(f"{where}[{j}]", v) for j, v in enumerate(vals)))
    return tuple(out)


def _paths_from_json(raw: Any, batch_sizes: list[int]) -> tuple[tuple[int | None, ...], ...]:
    """``target_epochs``: per batch size, integer epochs or ``null`` (never reached)."""
    out = []
    for i, row in enumerate(V.sequence("target_epochs", raw)):
        where = _row_name("target_epochs", i, batch_sizes)
        out.append(
            tuple(
                None if e is None else V.integer(f"{where}[{k}]", e, minimum=1)
                for k, e in enumerate(V.sequence(where, row))
            )
        )
    return tuple(out)


def _grid(
    field: str, values: Any, nb: int, npl: int, inst: TuningInstance
) -> tuple[tuple[float, ...], ...]:
    check(len(values) == nb, field, f"{len(values)} rows", f"expected {nb} (one per batch size)")
    out = []
    for i, row in enumerate(values):
        b = inst.batch_sizes[i]
        check(len(row) == npl, f"{field}[b={b}]", f"{len(row)} values", f"expected {npl}")
        vals = []
        for j, v in enumerate(row):
            where = f"{field}[b={b}, p={inst.power_limits_w[j]:g} W]"
            x = finite_nonneg(where, v)
            check(x > 0, where, v, "must be > 0")
            vals.append(x)
        out.append(tuple(vals))
    return tuple(out)
