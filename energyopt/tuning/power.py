"""JIT power-limit optimizer (paper Sec. 4.2, Eq. 7) and its profile sources.

The optimizer measures each power limit of P for a slice of an epoch and keeps,
per batch size, the limit that minimizes the epoch cost of Eq. 7. Where the
measurements come from is a :class:`PowerLimitProbe`: any callable

    ``probe(batch_size, power_limit_w) -> SliceMeasurement``

that sets the power limit, runs a slice of training at that batch size and
returns the seconds and joules it took and how much work (iterations, samples
or epochs; any unit, the same for every call) the slice did. Live sources (the
NVML collector, the simulated GPU of ``energyopt.profiles``) and recorded ones
(:func:`probe_from_power_table`, :func:`probe_from_profile`) look the same.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from energyopt.core.instance import InstanceError
from energyopt.tuning.cost import check_eta, epoch_cost

if TYPE_CHECKING:  # only for annotations: tables come from the caller, already read
    import pandas as pd


@dataclasses.dataclass(frozen=True)
class SliceMeasurement:
    """What one profiled slice cost.

    Attributes
    ----------
    time_s
        Wall-clock seconds of the slice.
    energy_j
        GPU energy of the slice, joules.
    work
        Work done in the slice, in a unit common to all slices of one batch size
        (iterations, samples or epochs). Cost per unit of work is what Eq. 7
        compares, so the unit cancels out of the choice of power limit.
    source
        Where the figures come from (``"nvml"``, ``"simulated ..."``, ``"zeus-trace"``).
    """

    time_s: float
    energy_j: float
    work: float = 1.0
    source: str = ""

    def __post_init__(self) -> None:
        for name in ("time_s", "energy_j", "work"):
            x = getattr(self, name)
            if not (isinstance(x, (int, float)) and math.isfinite(x) and x > 0):
                raise ValueError(f"SliceMeasurement.{name} = {x!r}: must be a finite number > 0")

    @property
    def avg_power_w(self) -> float:
        return self.energy_j / self.time_s


@runtime_checkable
class PowerLimitProbe(Protocol):
    """Measure one power limit for one slice of training at one batch size."""

    def __call__(self, batch_size: int, power_limit_w: float) -> SliceMeasurement: ...


@dataclasses.dataclass(frozen=True)
class PowerProfile:
    """Per-power-limit measurements of one batch size, normalized to one unit of work.

    ``time_s[p]`` and ``energy_j[p]`` are per unit of work; ``cost[p]`` is Eq. 7's
    term ``eta * E + (1 - eta) * MAXPOWER * T`` per unit of work.
    """

    batch_size: int
    time_s: dict[float, float]
    energy_j: dict[float, float]
    cost: dict[float, float]
    source: str = ""

    @property
    def best_power_limit_w(self) -> float:
        """The minimizer of Eq. 7; ties go to the larger limit (faster, same cost)."""
        return min(self.cost, key=lambda p: (self.cost[p], -p))


class JitPowerLimitOptimizer:
    """Eq. 7 solved online: profile every power limit once per batch size, keep the best.

    Parameters
    ----------
    power_limits_w
        The set P, in watts.
    eta
        Energy weight of the cost (Eq. 2).
    max_power_w
        MAXPOWER of Eq. 2; defaults to ``max(power_limits_w)``.
    order
        ``"descending"`` (Zeus profiles from the largest limit down) or ``"ascending"``.
    """

    def __init__(
        self,
        power_limits_w: Iterable[float],
        eta: float,
        max_power_w: float | None = None,
        order: str = "descending",
    ) -> None:
        limits = sorted({float(p) for p in power_limits_w}, reverse=(order == "descending"))
        if not limits:
            raise ValueError("power_limits_w must not be empty")
        if order not in ("descending", "ascending"):
            raise ValueError(f"order = {order!r}: expected 'descending' or 'ascending'")
        self.power_limits_w = tuple(limits)
        self.eta = check_eta(eta)
        self.max_power_w = float(max_power_w) if max_power_w else max(limits)
        self.profiles: dict[int, PowerProfile] = {}

    def known(self, batch_size: int) -> bool:
        """Whether ``batch_size`` was profiled already."""
        return int(batch_size) in self.profiles

    def profile(self, batch_size: int, probe: PowerLimitProbe) -> PowerProfile:
        """Measure every power limit with ``probe`` and record the batch size's profile."""
        t, e, c, sources = {}, {}, {}, set()
        for p in self.power_limits_w:
            m = probe(int(batch_size), p)
            if not isinstance(m, SliceMeasurement):
                raise TypeError(f"probe returned {type(m).__name__}, expected SliceMeasurement")
            t[p] = m.time_s / m.work
            e[p] = m.energy_j / m.work
            # Eq. 7 per unit of work: (eta * AvgPower + (1 - eta) * MAXPOWER) * time.
            c[p] = epoch_cost(t[p], e[p] / t[p], self.eta, self.max_power_w)
            sources.add(m.source)
        prof = PowerProfile(int(batch_size), t, e, c, source=",".join(sorted(sources)))
        self.profiles[int(batch_size)] = prof
        return prof

    def best(self, batch_size: int) -> float | None:
        """The chosen power limit of ``batch_size``; ``None`` before it is profiled."""
        prof = self.profiles.get(int(batch_size))
        return None if prof is None else prof.best_power_limit_w

    def optimize(self, batch_size: int, probe: PowerLimitProbe) -> float:
        """The best power limit of ``batch_size``, profiling it first when unseen."""
        if not self.known(batch_size):
            self.profile(batch_size, probe)
        best = self.best(batch_size)
        assert best is not None
        return best


def probe_from_power_table(
    table: pd.DataFrame | None = None,
    *,
    instance: object | None = None,
) -> PowerLimitProbe:
    """A probe that reads recorded (time per epoch, mean power) instead of measuring.

    Parameters
    ----------
    table
        One workload's rows of a Zeus power trace (``batch_size, power_limit,
        time_per_epoch, average_power``); one slice = one epoch.
    instance
        Or a :class:`~energyopt.tuning.instance.TuningInstance`, whose power table is used.
    """
    if instance is not None:
        inst = instance

        def probe(batch_size: int, power_limit_w: float) -> SliceMeasurement:
            i, j = inst.index_of_batch(batch_size), inst.index_of_power(power_limit_w)
            t = inst.epoch_time_s[i][j]
            return SliceMeasurement(t, t * inst.avg_power_w[i][j], 1.0, "recorded: trace table")

        return probe
    if table is None:
        raise ValueError("give a power table or an instance")
    rows = {
        (int(r.batch_size), float(r.power_limit)): (float(r.time_per_epoch), float(r.average_power))
        for r in table.itertuples()
    }

    def probe_table(batch_size: int, power_limit_w: float) -> SliceMeasurement:
        key = (int(batch_size), float(power_limit_w))
        if key not in rows:
            raise InstanceError(
                f"power table: no row for batch_size = {batch_size}, power_limit = {power_limit_w}"
            )
        t, p = rows[key]
        return SliceMeasurement(t, t * p, 1.0, "recorded: zeus power table")

    return probe_table


def probe_from_profile(
    profile: pd.DataFrame, *, workload: str | None = None, operation: str | None = None
) -> PowerLimitProbe:
    """A probe over a recorded profile in the project schema (``energyopt.profiles.schema``).

    Uses the rows with ``knob == "power_limit_w"`` (optionally of one
    ``workload`` / ``operation``); each row is one slice of one ``operation``
    (work = 1 operation), averaged when several rows share a setting. The
    profile's own ``source`` column is passed through, so simulated profiles stay
    labelled as such.
    """
    df = profile
    need = ("knob", "knob_value", "batch_size", "time_s", "energy_j", "source")
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise InstanceError(f"profile: missing column(s) {', '.join(missing)}")
    df = df[df.knob == "power_limit_w"]
    if workload is not None:
        df = df[df.workload == workload]
    if operation is not None:
        df = df[df.operation == operation]
    if df.empty:
        raise InstanceError(
            f"profile: no power_limit_w rows (workload={workload!r}, operation={operation!r})"
        )
    grouped = df.groupby(["batch_size", "knob_value"]).agg(
        time_s=("time_s", "mean"), energy_j=("energy_j", "mean"), source=("source", "first")
    )
    rows = {(int(b), float(p)): r for (b, p), r in grouped.iterrows()}

    def probe(batch_size: int, power_limit_w: float) -> SliceMeasurement:
        key = (int(batch_size), float(power_limit_w))
        if key not in rows:
            raise InstanceError(
                f"profile: no row for batch_size = {batch_size}, power_limit_w = {power_limit_w}"
            )
        r = rows[key]
        return SliceMeasurement(float(r.time_s), float(r.energy_j), 1.0, str(r.source))

    return probe


def probe_from_device(
    device: Any,
    step_for: Callable[[int], Callable[[], Any]],
    *,
    iterations: int = 20,
    seconds: float = 0.0,
    warmup: int = 1,
    synchronize: Callable[[], Any] | None = None,
) -> PowerLimitProbe:
    """A live probe over a :class:`energyopt.profiles.device.GpuDevice` (NVML or simulated).

    Each call sets the power limit, runs ``step_for(batch_size)`` (one training
    iteration at that batch size) for at least ``iterations`` steps and ``seconds``
    seconds with :func:`energyopt.profiles.collector.measure`, and puts the
    previous power limit back (also on errors). Work is counted in iterations.
    The measurement's ``source`` is the device's (``"simulated ..."`` for the
    simulated GPU), so simulated figures stay labelled.
    """
    from energyopt.profiles.collector import measure, restored_settings

    src = str(getattr(device, "source", "") or device.info.backend)
    label = f"{src} ({device.info.name})"

    def probe(batch_size: int, power_limit_w: float) -> SliceMeasurement:
        with restored_settings(device) as gpu:
            gpu.set_power_limit_w(float(power_limit_w))
            t, e, n = measure(
                device,
                step_for(int(batch_size)),
                iterations=iterations,
                seconds=seconds,
                warmup=warmup,
                synchronize=synchronize,
            )
        return SliceMeasurement(t * n, e * n, float(n), label)

    return probe
