"""What a frontier crawl produced: the type the grid crawl, the hull crawl and the repairs share."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np


@dataclasses.dataclass
class CrawlTrace:
    """Everything the crawl produced, before dominance filtering.

    Attributes
    ----------
    choices
        One row of option indices per schedule (minimal-energy schedule first).
    planned_time_s, planned_energy_j
        The crawl's own view of each schedule: planned makespan (integer units
        times tau) and modelled effective energy plus ``P_b * S * T``.
    time_s, energy_j
        Measured: makespan and energy (blocking up to the makespan) of the clocks.
    repair_rows
        The rows the end repairs start from (``None``: all). The hull crawl names
        its ``fit_rows`` plans and their gap plans, the plans it made before it kept
        a second fitting, so that the repairs start where they did and the second
        fitting's plans only add points.
    """

    choices: np.ndarray
    planned_time_s: np.ndarray
    planned_energy_j: np.ndarray
    time_s: np.ndarray
    energy_j: np.ndarray
    stats: dict[str, Any]
    repair_rows: np.ndarray | None = None
