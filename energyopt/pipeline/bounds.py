"""Deprecated name of :mod:`energyopt.pipeline.timewindows` (it holds time windows, not bounds)."""

import warnings

from energyopt.pipeline.timewindows import TimeWindows, time_windows

warnings.warn(
    "energyopt.pipeline.bounds is energyopt.pipeline.timewindows now",
    DeprecationWarning,
    stacklevel=2,
)

__all__ = ["TimeWindows", "time_windows"]
