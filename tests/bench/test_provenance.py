"""The report's provenance lines: version, commit, date, CPU, solvers, time limits."""

from __future__ import annotations

import pandas as pd

import energyopt
from energyopt.bench.provenance import provenance


def test_provenance_lines():
    cells = pd.DataFrame({"time_limit_s": [30.0, 30.0, 5.0, float("nan")]})
    lines = dict(provenance(cells, [{"started_at": "2026-11-28T00:00"}], ["0.1.0 commit=x", ""]))
    assert lines["energyopt version"] == energyopt.__version__
    assert lines["time limits (s)"] == "5, 30"
    assert lines["HiGHS (highspy)"][0].isdigit()
    assert "logical CPUs" in lines["CPU"]
    assert lines["runs started"] == "2026-11-28T00:00"
    assert lines["report written by"].startswith(energyopt.__version__ + " commit=")
    assert lines["cells computed by"] == "0.1.0 commit=x; unrecorded"
    empty = dict(provenance(pd.DataFrame({"time_limit_s": []}), []))
    assert empty["time limits (s)"] == "none recorded" and "runs started" not in empty
