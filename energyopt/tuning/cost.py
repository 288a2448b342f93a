"""The Zeus energy-time cost metric (formulations/tuning.md, Eqs. 1-3, 5 and 7).

All costs are in joules: ``(1 - eta) * MAXPOWER * TTA`` turns seconds into
joules with the maximum power limit, so that ``eta`` weighs two quantities of
the same unit.
"""

from __future__ import annotations

import math

from energyopt.core.instance import InstanceError


def check_eta(eta: float) -> float:
    """``eta`` as a float in [0, 1]; :class:`InstanceError` otherwise."""
    try:
        x = float(eta)
    except (TypeError, ValueError):
        raise InstanceError(f"eta = {eta!r}: not a number") from None
    if not (math.isfinite(x) and 0.0 <= x <= 1.0):
        raise InstanceError(f"eta = {eta!r}: must lie in [0, 1]")
    return x


def energy_time_cost(energy_j: float, time_s: float, eta: float, max_power_w: float) -> float:
    """Eq. 2: ``C = eta * ETA + (1 - eta) * MAXPOWER * TTA`` in joules.

    Parameters
    ----------
    energy_j
        Energy to accuracy (ETA), joules.
    time_s
        Time to accuracy (TTA), seconds.
    eta
        Weight of energy in [0, 1] (1: energy only, 0: time only).
    max_power_w
        MAXPOWER, the largest power limit of the GPU, watts.

    Examples
    --------
    >>> energy_time_cost(1000.0, 10.0, 0.5, 250.0)  # 0.5*1000 + 0.5*250*10
    1750.0
    """
    return eta * energy_j + (1.0 - eta) * max_power_w * time_s


def epoch_cost(
    time_per_epoch_s: float, avg_power_w: float, eta: float, max_power_w: float
) -> float:
    """Cost of one epoch at one power limit: the term minimized in Eq. 7.

    ``(eta * AvgPower + (1 - eta) * MAXPOWER) / Throughput`` with Throughput in
    epochs per second, i.e. ``(eta * AvgPower + (1 - eta) * MAXPOWER) * time_per_epoch``
    (Eq. 3 for one epoch).

    Examples
    --------
    >>> epoch_cost(10.0, 200.0, 0.5, 250.0)  # (0.5*200 + 0.5*250) * 10
    2250.0
    """
    return (eta * avg_power_w + (1.0 - eta) * max_power_w) * time_per_epoch_s


def recurrence_cost(
    epochs: float, time_per_epoch_s: float, avg_power_w: float, eta: float, max_power_w: float
) -> float:
    """Eq. 5: ``Epochs(b) * EpochCost(b, p; eta)`` for a run that trains ``epochs`` epochs."""
    return epochs * epoch_cost(time_per_epoch_s, avg_power_w, eta, max_power_w)
