"""Gap reports: gaps by the one definition, contradictions flagged, self-contained HTML."""

from __future__ import annotations

import json

import pytest
from benchutil import fake_record

import energyopt
from energyopt.bench.cells import make_cell
from energyopt.bench.report import build_report, make_report
from energyopt.bench.runner import plan_cells, run_bench
from energyopt.bench.store import ResultsStore
from energyopt.pipeline import synthetic_instance


def test_gaps_against_the_best_bound_and_contradictions(tmp_path, instance_files):
    inst = energyopt.load_instance(instance_files[0])
    store = tmp_path / "r.sqlite"
    exact = make_cell(inst, "highs", seed=0, time_limit_s=1, suite="file", origin="x")
    weak = make_cell(inst, "cpsat", seed=0, time_limit_s=1, suite="file", origin="x")
    heur = make_cell(inst, "bruteforce", seed=0, time_limit_s=1, suite="file", origin="x")
    with ResultsStore(store, create=True) as db:
        run = db.start_run(["test"], "local", 1)
        # highs: 110 with bound 100; cpsat: 120 with bound 104; "bruteforce": 130, no bound.
        db.add_cell(exact.to_spec(), fake_record(exact, 110.0, 100.0), run)
        db.add_cell(weak.to_spec(), fake_record(weak, 120.0, 104.0), run)
        db.add_cell(heur.to_spec(), fake_record(heur, 130.0, None), run)
    report = build_report(store, plots=False)
    gaps = {c["method"]: c["gap_to_best_bound"] for c in report.cells}
    # Best bound 104: gaps (110-104)/110, (120-104)/120, (130-104)/130.
    assert gaps["highs"] == pytest.approx(6 / 110)
    assert gaps["cpsat"] == pytest.approx(16 / 120)
    assert gaps["bruteforce"] == pytest.approx(26 / 130)
    assert report.bugs == []

    # A method below a proven bound is a bug and must be reported as one.
    with ResultsStore(store) as db:
        bad = make_cell(inst, "exact-frontier", seed=0, time_limit_s=1, suite="file", origin="x")
        db.add_cell(bad.to_spec(), fake_record(bad, 103.0, None), run)
    report = build_report(store, plots=False)
    assert any("exact-frontier" in b and "below the best proven bound" in b for b in report.bugs)


def test_report_files_with_embedded_frontier_plot(tmp_path):
    inst = synthetic_instance(2, 2, 3, seed=1)  # no deadline: the frontier's whole range
    path = tmp_path / "syn.json"
    inst.to_json(path)
    store = tmp_path / "r.sqlite"
    cells = plan_cells(files=[path], methods=["exact-frontier", "highs"], time_limit_s=30)
    run_bench(cells, store, jobs=2, progress=False)
    out = tmp_path / "report"
    report = make_report(store, out)
    assert len(report.plots) == 1
    html = (out / "index.html").read_text()
    assert "data:image/png;base64," in html
    assert "src='http" not in html and 'src="http' not in html  # self-contained
    md = (out / "summary.md").read_text()
    assert "| exact-frontier |" in md and "## pipeline" in md
    assert (out / "cells.csv").read_text().count("\n") == 1 + len(cells)
    summary = {r["method"]: r for r in report.summary}
    assert summary["exact-frontier"]["proven_optimal"] == 1
    with ResultsStore(store) as db:
        (res,) = [r for r in db.iter_results() if r["method"] == "exact-frontier"]
    assert len(res["frontier"]) >= 1
    assert json.dumps(res)  # the whole Result.to_dict() is stored
