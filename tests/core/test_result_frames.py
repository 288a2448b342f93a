"""Result as pandas: to_frame (one row) and frontier_frame (one row per point)."""

from __future__ import annotations

import math

import pandas as pd

from energyopt.core.result import FrontierPoint, Result
from energyopt.core.status import SolutionStatus, TerminationReason


def _result() -> Result:
    return Result(
        "pipeline", "abc", "exact-frontier", TerminationReason.TIME_LIMIT,
        SolutionStatus.FEASIBLE, objective=110.0, bound=100.0, runtime_s=1.5,
        options={"rel_gap": 1e-6},
        frontier=(FrontierPoint(2.0, 90.0, bound=90.0), FrontierPoint(1.0, 120.0),
                  FrontierPoint(1.5, 100.0, bound=95.0)),
    )  # fmt: skip


def test_to_frame_is_one_tidy_row_with_plain_values():
    df = _result().to_frame()
    assert len(df) == 1
    row = df.iloc[0]
    assert row["termination"] == "time_limit" and row["status"] == "feasible"
    assert row["gap"] == (110 - 100) / 110
    assert row["options"] == '{"rel_gap": 1e-06}' and row["frontier_points"] == 3
    assert "solution" not in df.columns


def test_frames_of_several_results_concatenate_with_a_key_and_nan_bounds():
    # Issue 27: pd.concat gave the index 0, 0, 0 and a bound column of Python None.
    a = _result()
    b = Result("pipeline", "abc", "highs", TerminationReason.TIME_LIMIT, SolutionStatus.NONE)
    c = Result("pipeline", "def", "lns", TerminationReason.COMPLETED, SolutionStatus.FEASIBLE,
               objective=5.0, seed=3)  # fmt: skip
    df = pd.concat([r.to_frame() for r in (a, b, c)])
    assert list(df.index.names) == ["instance_id", "method", "seed"]
    assert df.index.is_unique
    assert df.loc[("def", "lns", 3), "objective"] == 5.0
    for col in ("objective", "bound", "gap", "runtime_s"):
        assert df[col].dtype == "float64", col
    assert math.isnan(df.loc[("abc", "highs"), "bound"].iloc[0])
    assert df["bound"].isna().tolist() == [False, True, True]
    assert str(df.reset_index()["seed"].dtype) == "Int64"


def test_frontier_frame_sorted_with_units_and_nan_for_no_bound():
    df = _result().frontier_frame()
    assert list(df.columns) == ["method", "deadline_s", "energy_j", "bound_j", "gap"]
    assert list(df["deadline_s"]) == [1.0, 1.5, 2.0]
    assert math.isnan(df["bound_j"][0]) and math.isnan(df["gap"][0])
    assert df["gap"][1] == (100 - 95) / 100 and df["gap"][2] == 0.0
    assert (df["method"] == "exact-frontier").all()
    empty = Result("pipeline", "x", "highs", TerminationReason.OPTIMAL, SolutionStatus.OPTIMAL)
    assert empty.frontier_frame().empty
    assert isinstance(empty.to_frame(), pd.DataFrame)


def test_repr_shows_values_not_enum_names():
    text = repr(_result())
    assert "termination='time_limit'" in text and "TerminationReason" not in text
    assert "TerminationReason" not in str(_result())
