"""The power limit Zeus's own selectors pick from a ZeusMonitor profile.

Zeus's ``GlobalPowerLimitOptimizer`` measures one window per power limit and then
asks an ``OptimumSelector`` (``zeus/optimizer/power_limit.py``) for the limit to
keep. :func:`power_limit_choice` gives exactly what those selectors give on the
same windows, ties included:

``energy``
    ``Energy``: least energy (summed over the job's GPUs).
``time``
    ``Time``: least time. Measured times are noisy, so this need not be the highest
    limit.
``zeus-cost:ETA``
    ``ZeusCost(eta_knob=ETA, world_size=num_gpus)``: least
    ``ETA * energy + (1 - ETA) * max_power * time`` with ``max_power`` the highest
    measured limit times the number of GPUs.
``max-slowdown:FACTOR``
    ``MaxSlowdownConstraint(FACTOR)``: the lowest limit whose time is at most
    ``FACTOR`` times the time measured at the highest limit.

Ties go to the window measured first (Zeus takes ``min`` over its measurements in
the order it profiled them, from the highest limit down; here: file order).
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from energyopt.core.instance import InstanceError
from energyopt.tuning.cost import energy_time_cost

if TYPE_CHECKING:  # pandas comes with the profile; selecting needs none of it
    import pandas as pd

#: Selector names, as written before the ``:`` of a selector string.
SELECTORS = ("energy", "time", "zeus-cost", "max-slowdown")


@dataclasses.dataclass(frozen=True)
class Window:
    """One profiled power limit: the job's seconds and joules (all GPUs) in the window."""

    power_limit_w: int
    time_s: float
    energy_j: float


@dataclasses.dataclass(frozen=True)
class Selector:
    """A parsed selector string: its name and its parameter (``None`` for none)."""

    name: str
    value: float | None = None

    def __str__(self) -> str:
        return self.name if self.value is None else f"{self.name}:{self.value:g}"


def parse_selector(text: Any) -> Selector:
    """``"energy"``, ``"time"``, ``"zeus-cost:ETA"`` (0 <= ETA <= 1) or
    ``"max-slowdown:FACTOR"`` (FACTOR >= 1); a one-line ``ValueError`` otherwise."""
    if not isinstance(text, str):
        raise ValueError(f"selector = {text!r}: must be a string such as 'zeus-cost:0.5'")
    name, colon, arg = text.strip().partition(":")
    usage = "expected energy, time, zeus-cost:ETA or max-slowdown:FACTOR"
    if name in ("energy", "time"):
        if colon:
            raise ValueError(f"selector = {text!r}: {name} takes no parameter ({usage})")
        return Selector(name)
    if name not in ("zeus-cost", "max-slowdown"):
        raise ValueError(f"selector = {text!r}: {usage}")
    try:
        value = float(arg)
    except ValueError:
        raise ValueError(f"selector = {text!r}: {name} needs a number after ':'") from None
    if not math.isfinite(value):
        raise ValueError(f"selector = {text!r}: the parameter must be finite")
    if name == "zeus-cost" and not 0.0 <= value <= 1.0:
        raise ValueError(f"selector = {text!r}: ETA must lie in [0, 1]")
    if name == "max-slowdown" and not value >= 1.0:
        raise ValueError(f"selector = {text!r}: FACTOR must be >= 1")
    return Selector(name, value)


def profile_windows(profile: str | Path | pd.DataFrame) -> tuple[list[Window], int]:
    """The windows of a ZeusMonitor JIT profile (path or frame) in file order, and
    the number of GPUs of the job.

    A frame must be one job's power-limit profile: knob ``power_limit_w``, one row
    per limit (what :func:`energyopt.profiles.read_zeus_monitor_log` returns).
    """
    if isinstance(profile, (str, Path)):
        from energyopt.profiles.zeusmonitor import read_zeus_monitor_log

        profile = read_zeus_monitor_log(profile)
    where = str(profile.attrs.get("file", "profile"))
    if profile.empty:
        raise InstanceError(f"{where}: no windows")
    if set(profile["knob"]) != {"power_limit_w"}:
        raise InstanceError(f"{where}: knob = {sorted(set(profile['knob']))}: need power_limit_w")
    for col in ("workload", "operation", "gpu"):
        if profile[col].nunique() > 1:
            raise InstanceError(
                f"{where}: {col} takes {profile[col].nunique()} values: give one job's profile"
            )
    if profile["knob_value"].duplicated().any():
        dup = profile["knob_value"][profile["knob_value"].duplicated()].iloc[0]
        raise InstanceError(f"{where}: knob_value = {dup:g}: a power limit appears twice")
    gpus = profile["num_gpus"] if "num_gpus" in profile.columns else None
    num_gpus = 1 if gpus is None or gpus.isna().all() else int(gpus.iloc[0])
    if gpus is not None and gpus.nunique() > 1:
        raise InstanceError(f"{where}: num_gpus varies between rows: give one job's profile")
    windows = [
        Window(_whole_watts(where, v), float(t), float(e))
        for v, t, e in zip(profile["knob_value"], profile["time_s"], profile["energy_j"])
    ]
    return windows, num_gpus


def _whole_watts(where: str, value: float) -> int:
    if not float(value).is_integer():
        raise InstanceError(f"{where}: knob_value = {value!r}: Zeus's limits are whole watts")
    return int(value)


def select(windows: list[Window], selector: Selector, num_gpus: int) -> int:
    """The power limit (W) that ``selector`` picks among ``windows`` (see the module)."""
    if not windows:
        raise ValueError("no windows to choose from")
    if selector.name == "energy":
        return min(windows, key=lambda w: w.energy_j).power_limit_w
    if selector.name == "time":
        return min(windows, key=lambda w: w.time_s).power_limit_w
    if selector.name == "zeus-cost":
        assert selector.value is not None
        # Zeus's zeus_cost: MAXPOWER is the highest limit profiled, over all the job's GPUs.
        max_power = max(w.power_limit_w for w in windows) * num_gpus
        cost = [energy_time_cost(w.energy_j, w.time_s, selector.value, max_power) for w in windows]
        return windows[cost.index(min(cost))].power_limit_w
    assert selector.name == "max-slowdown" and selector.value is not None
    top = max(w.power_limit_w for w in windows)
    # Zeus reads the first window at the highest limit (there is one here).
    base = next(w.time_s for w in windows if w.power_limit_w == top)
    return min(w.power_limit_w for w in windows if w.time_s <= selector.value * base)


def power_limit_choice(profile: str | Path | pd.DataFrame, selector: str) -> int:
    """The power limit (W) Zeus's selector ``selector`` picks for ``profile``.

    Parameters
    ----------
    profile
        A ZeusMonitor log of Zeus's JIT power-limit optimizer (path), or the frame
        :func:`energyopt.profiles.read_zeus_monitor_log` read from one.
    selector
        ``"energy"``, ``"time"``, ``"zeus-cost:ETA"`` or ``"max-slowdown:FACTOR"``.

    Returns
    -------
    int
        The chosen power limit in watts.

    Raises
    ------
    ValueError
        A malformed selector (:class:`~energyopt.core.instance.InstanceError`, a
        ``ValueError``, for a malformed profile).
    """
    sel = parse_selector(selector)
    windows, num_gpus = profile_windows(profile)
    return select(windows, sel, num_gpus)


def choice_table(profile: str | Path | pd.DataFrame, selectors: list[str]) -> dict[str, Any]:
    """Per selector its choice, with the windows it chose from (for ``--json``)."""
    sels = [parse_selector(s) for s in selectors]
    windows, num_gpus = profile_windows(profile)
    return {
        "num_gpus": num_gpus,
        "windows": [dataclasses.asdict(w) for w in windows],
        "choices": {str(s): select(windows, s, num_gpus) for s in sels},
    }
