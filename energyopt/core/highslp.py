"""Models handed to ``highspy`` directly, without Pyomo: rows to a sparse matrix to a HighsLp.

Used where a model is small or re-solved many times and Pyomo's build time would
dominate: the PEM hull relaxation, the PEM neighbourhood search, the capacity
pattern model.
"""

from __future__ import annotations

from collections.abc import Sequence

import highspy
import numpy as np
from scipy.sparse import coo_matrix, csc_matrix

#: One row: (column indices, coefficients); its bounds are given separately.
Row = tuple[Sequence[int], Sequence[float]]

#: HiGHS' presolve rule 15, probing, as a ``presolve_rule_off`` bit. In HiGHS 1.12 probing
#: does not read the clock: on the 50-node capacity paper instance
#: (``instances/capacity/paper/012-paper-s2-n50-point50.json``) it ran 1.2 s past a 0.2 s
#: time limit. With a time limit it is switched off (:func:`time_limit_options`).
PROBING_OFF = 1 << 15


def time_limit_options(seconds: float) -> dict[str, float | int]:
    """HiGHS options for a time limit that holds: the limit, and presolve's probing off.

    HiGHS' log itself advises switching probing off where its time limit matters. On the
    paper suites this left the proven gaps of the exact methods about where they were,
    and made the power-cap MILPs 1.6-5x faster (``docs/architecture.md``, "Time limits").
    """
    return {"time_limit": max(0.01, float(seconds)), "presolve_rule_off": PROBING_OFF}


def csc_rows(rows: Sequence[Row], num_cols: int) -> csc_matrix:
    """The constraint matrix of ``rows`` (one per row) in compressed-column form."""
    r_idx: list[int] = []
    c_idx: list[int] = []
    vals: list[float] = []
    for r, (cols, coefs) in enumerate(rows):
        r_idx += [r] * len(cols)
        c_idx += list(cols)
        vals += list(coefs)
    return coo_matrix((vals, (r_idx, c_idx)), shape=(len(rows), num_cols)).tocsc()


def highs_lp(
    cost: np.ndarray,
    col_lower: np.ndarray,
    col_upper: np.ndarray,
    matrix: csc_matrix,
    row_lower: np.ndarray,
    row_upper: np.ndarray,
    num_integer: int = 0,
) -> highspy.HighsLp:
    """A HighsLp; its first ``num_integer`` columns are integer, the rest continuous."""
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = len(cost), matrix.shape[0]
    lp.col_cost_ = np.asarray(cost, dtype=float)
    lp.col_lower_ = np.asarray(col_lower, dtype=float)
    lp.col_upper_ = np.asarray(col_upper, dtype=float)
    lp.row_lower_ = np.asarray(row_lower, dtype=float)
    lp.row_upper_ = np.asarray(row_upper, dtype=float)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = matrix.indptr
    lp.a_matrix_.index_ = matrix.indices
    lp.a_matrix_.value_ = matrix.data
    if num_integer:
        kinds = [highspy.HighsVarType.kInteger] * num_integer
        lp.integrality_ = kinds + [highspy.HighsVarType.kContinuous] * (len(cost) - num_integer)
    return lp


def quiet_highs(lp: highspy.HighsLp, *, seed: int = 0) -> highspy.Highs:
    """A one-thread HiGHS instance holding ``lp``, with its log off."""
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    h.setOptionValue("random_seed", int(seed) % (2**31 - 1))
    h.passModel(lp)
    return h
