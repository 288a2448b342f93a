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
    import sqlite3

    con = sqlite3.connect(store)
    with con:  # a name that matplotlib would parse as broken mathtext (issue 13)
        con.execute("UPDATE cells SET instance_name = 'run $\\alpha_{1$ cost'")
    con.close()
    out = tmp_path / "report"
    report = make_report(store, out)
    assert not report.problems
    # Per instance: the frontiers with the bound shaded, and the gap against time.
    iid = inst.instance_id
    assert {f"frontier-{iid}.png", f"frontier-{iid}-gapcurve.png"} <= set(report.plots)
    assert sum(n.startswith("frontier-") for n in report.plots) == 2
    (fs,) = [r for r in report.frontier_summary if r["method"] == "exact-frontier"]
    assert fs["points"] >= 1 and fs["no_bound"] == 0 and fs["max_point_gap"] < 1e-6
    assert {"pipeline-gaps.png", "pipeline-profile-runtime.png"} <= set(report.plots)
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


def _hostile_store(tmp_path, instance_files):
    """A store with the malformed cells of issue 13 beside good ones."""
    import sqlite3

    store = tmp_path / "hostile.sqlite"
    insts = [energyopt.load_instance(p) for p in instance_files]
    with ResultsStore(store, create=True) as db:
        run = db.start_run(["test"], "local", 1)
        for inst in insts:
            for method, obj, bound in (("highs", 110.0, 100.0), ("bruteforce", 130.0, None),
                                       ("cpsat", 120.0, 0.0)):  # fmt: skip
                cell = make_cell(inst, method, seed=0, time_limit_s=1, suite="file", origin="x")
                db.add_cell(cell.to_spec(), fake_record(cell, obj, bound), run)
    con = sqlite3.connect(store)
    keys = [k for (k,) in con.execute("SELECT cell_key FROM cells ORDER BY cell_key")]
    with con:
        con.execute("UPDATE cells SET result_json = '[1, 2, 3]' WHERE cell_key = ?", (keys[0],))
        con.execute("UPDATE cells SET objective = 'lots' WHERE cell_key = ?", (keys[1],))
        con.execute("UPDATE cells SET bound = '99 J' WHERE cell_key = ?", (keys[2],))
        bad = json.dumps({"family": "pipeline", "frontier": [[1, 2]], "method": "highs"})
        con.execute("UPDATE cells SET result_json = ? WHERE cell_key = ?", (bad, keys[3]))
        bad = json.dumps({"family": "pipeline", "frontier": {"a": 1}, "method": "highs"})
        con.execute("UPDATE cells SET result_json = ? WHERE cell_key = ?", (bad, keys[4]))
        con.execute(
            "UPDATE cells SET instance_name = ? WHERE instance_id = ?",
            ("run $\\alpha_{1$ cost", insts[0].instance_id),
        )
    con.close()
    return store, insts


def test_hostile_cells_are_reported_and_skipped(tmp_path, instance_files):
    store, _ = _hostile_store(tmp_path, instance_files)
    out = tmp_path / "rep"
    report = make_report(store, out)
    text = "\n".join(report.problems)
    assert "objective not a number: 'lots'" in text
    assert "bound not a number: '99 J'" in text
    assert "result_json is a list" in text
    assert "frontier point 0: a list" in text and "frontier is a dict" in text
    html = (out / "index.html").read_text()
    assert "run $\\alpha_{1$ cost" in html  # the mathtext name is plain text, not an error
    assert "Unreadable cells" in html
    assert {"pipeline-gaps.png", "pipeline-gap-heatmap.png"} <= set(report.plots)
    assert not [p for p in report.problems if p.startswith("plot ")]


def test_no_bound_is_counted_not_averaged(tmp_path, instance_files):
    """cpsat's bound 0 on a positive objective is no useful bound; bruteforce has none."""
    store, _ = _hostile_store(tmp_path, instance_files)
    report = build_report(store, plots=False)
    summary = {r["method"]: r for r in report.summary}
    # bruteforce: 3 solved cells, best bound 100 from highs on two of them (one highs cell
    # has a text bound, and one cell's objective is text): no cell without a gap is averaged.
    for r in report.summary:
        assert r["with_gap"] + r["no_bound"] == r["solved"]
    assert summary["cpsat"]["with_bound"] == 0
    gaps = [c["gap_to_best_bound"] for c in report.cells if c["method"] == "cpsat"]
    assert all(g is None or g == pytest.approx(20 / 120) for g in gaps)


def test_read_results_is_a_sorted_tidy_frame(tmp_path, instance_files):
    from energyopt.bench import read_results

    store, _ = _hostile_store(tmp_path, instance_files)
    frame = read_results(store)
    assert len(frame) == 9
    assert frame["objective"].dtype == float and frame["bound"].dtype == float
    assert frame["objective"].isna().sum() == 1  # the text objective
    keys = list(zip(frame["family"], frame["instance_name"], frame["instance_id"], frame["method"]))
    assert keys == sorted(keys)
    assert (frame["problem"] != "").sum() == 2


def test_display_names_are_unique(tmp_path, instance_files):
    import sqlite3

    store, insts = _hostile_store(tmp_path, instance_files)
    con = sqlite3.connect(store)
    with con:
        con.execute("UPDATE cells SET instance_name = 'same'")
    con.close()
    report = build_report(store, plots=False)
    names = {c["instance_id"]: c["instance"] for c in report.cells}
    assert len(set(names.values())) == len(insts)
    assert all(n.startswith("same [") for n in names.values())
