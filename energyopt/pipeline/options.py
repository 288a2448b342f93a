"""Execution options of a computation: (SM clock, time, energy) measured on the GPU."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from energyopt.core import validate as V
from energyopt.core.instance import InstanceError

#: Sane magnitudes of one computation read from data (one microbatch's forward or backward
#: pass on one stage): GPT-3 175B on A100 takes ~0.05 s and ~20 J. The methods work on a
#: time grid of milliseconds (the crawl's tau, CP-SAT's ticks), so an hour-long computation
#: is already 3.6 million steps; beyond these a value is a unit or typing mistake. Only
#: ``from_dict`` applies them: solvers may build rescaled copies of an instance.
MAX_TIME_S = 3600.0
MAX_ENERGY_J = 1e7
MAX_CLOCK_MHZ = 100_000
#: The most options of one table: a GPU has a few hundred SM clocks at most. The crawl
#: moves plans as 16-bit option indices, so this also keeps every index in range.
MAX_OPTIONS = 10_000


def _clock(field: str, value: Any) -> int | None:
    """An SM clock in MHz, or ``null`` for an option whose time does not depend on it."""
    return None if value is None else V.integer(field, value, minimum=1, maximum=MAX_CLOCK_MHZ)


@dataclasses.dataclass(frozen=True)
class OptionTable:
    """The options of one kind of computation, one entry per SM clock.

    A computation whose time does not depend on the clock (data loading, a slow
    link: Perseus 4.4) has a single option with ``sm_clock_mhz = None``.
    """

    sm_clock_mhz: tuple[int | None, ...]
    time_s: tuple[float, ...]
    energy_j: tuple[float, ...]

    def validate(self, where: str) -> None:
        n = len(self.time_s)
        if n == 0:
            raise InstanceError(f"{where}: empty option set")
        if n > MAX_OPTIONS:
            raise InstanceError(f"{where}: {n} options, more than {MAX_OPTIONS}")
        if len(self.energy_j) != n or len(self.sm_clock_mhz) != n:
            raise InstanceError(
                f"{where}: sm_clock_mhz, time_s and energy_j have different lengths "
                f"({len(self.sm_clock_mhz)}, {n}, {len(self.energy_j)})"
            )
        for k, (f, t, e) in enumerate(zip(self.sm_clock_mhz, self.time_s, self.energy_j)):
            if not (isinstance(t, float) and math.isfinite(t) and t >= 0):
                raise InstanceError(f"{where}.time_s[{k}] = {t!r}: must be a finite number >= 0")
            if not (isinstance(e, float) and math.isfinite(e) and e >= 0):
                raise InstanceError(f"{where}.energy_j[{k}] = {e!r}: must be a finite number >= 0")
            if f is not None and not (isinstance(f, int) and not isinstance(f, bool) and f > 0):
                raise V.fail(f"{where}.sm_clock_mhz[{k}]", f, "must be a positive integer")
        clocks = [f for f in self.sm_clock_mhz if f is not None]
        if len(set(clocks)) != len(clocks):
            raise InstanceError(f"{where}.sm_clock_mhz = {list(self.sm_clock_mhz)}: repeated clock")

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str = "table") -> OptionTable:
        data = V.mapping(where, data)
        V.fields(data, where, required=("sm_clock_mhz", "time_s", "energy_j"))

        def col(name: str, conv: Any) -> tuple:
            if name not in data:
                raise InstanceError(f"{where}: missing field {name!r}")
            vals = V.sequence(f"{where}.{name}", data[name], max_length=MAX_OPTIONS)
            return tuple(conv(f"{where}.{name}[{k}]", v) for k, v in enumerate(vals))

        table = cls(
            col("sm_clock_mhz", _clock),
            col("time_s", lambda f, v: V.number(f, v, minimum=0.0, maximum=MAX_TIME_S)),
            col("energy_j", lambda f, v: V.number(f, v, minimum=0.0, maximum=MAX_ENERGY_J)),
        )
        table.validate(where)
        return table

    def to_dict(self) -> dict[str, list]:
        return {
            "sm_clock_mhz": list(self.sm_clock_mhz),
            "time_s": list(self.time_s),
            "energy_j": list(self.energy_j),
        }

    def __len__(self) -> int:
        return len(self.time_s)

    def pareto(self, p_blocking_w: float) -> tuple[list[int], list[int]]:
        """Indices kept and dropped by dominance filtering.

        Option k is dominated when another option is no slower and has no higher
        *effective* energy ``e - P_blocking * t`` (Perseus Eq. 4), one of the two
        strictly. Effective energy is what the objective charges a computation,
        since a GPU that finishes early draws blocking power until the deadline.
        Of exact ties the fastest-clock option is kept.
        """
        eff = [e - p_blocking_w * t for t, e in zip(self.time_s, self.energy_j)]
        order = sorted(
            range(len(self)), key=lambda k: (self.time_s[k], eff[k], -(self.sm_clock_mhz[k] or 0))
        )
        keep, best = [], math.inf
        for k in order:
            if eff[k] < best - 1e-12:
                keep.append(k)
                best = eff[k]
        dropped = sorted(set(range(len(self))) - set(keep))
        return sorted(keep, key=lambda k: self.time_s[k]), dropped

    def subset(self, idx: list[int]) -> OptionTable:
        return OptionTable(
            tuple(self.sm_clock_mhz[k] for k in idx),
            tuple(self.time_s[k] for k in idx),
            tuple(self.energy_j[k] for k in idx),
        )
