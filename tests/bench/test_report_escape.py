"""Names from the user's files reach summary.md and cells.csv inert (issue 27).

The two hostile instances of ``../shared/repro/report-*.json`` are rebuilt here (their
names and sources are what matters), so the test needs no data outside the repository.
"""

from __future__ import annotations

import csv

from benchutil import fake_record

from energyopt.bench.cells import make_cell
from energyopt.bench.escape import csv_frame, csv_text, markdown_text
from energyopt.bench.report import make_report
from energyopt.bench.store import ResultsStore
from energyopt.pipeline import random_dag_instance

FORMULA = '=HYPERLINK("http://evil","x")'
NAMES = (FORMULA, "line1\n<script>alert(2)</script>\r\n| a | b |", "@SUM(1+1)*cmd|' /C calc'!A0")


def test_markdown_text_is_one_inert_line():
    out = markdown_text("line1\n<script>alert(2)</script>\r\n| a | b |\u2028[x](javascript:y)")
    assert "\n" not in out and "\r" not in out and "\u2028" not in out
    assert "<" not in out and ">" not in out and "&lt;script&gt;" in out
    assert "|" not in out.replace("\\|", "")  # every pipe escaped
    assert "\\[x\\](javascript:y)" in out  # no link
    assert markdown_text("a & b") == "a &amp; b"
    assert markdown_text("plain name 1.5e-3") == "plain name 1.5e-3"


def test_csv_text_neutralises_formulas_only():
    for text in ("=1+1", "+1", "-1+1", "@SUM(A1)", "\t=1", "\r=1"):
        assert csv_text(text) == "'" + text
    assert csv_text("ok =1") == "ok =1"
    assert csv_text(-1.5) == -1.5 and csv_text(None) is None


def test_report_outputs_escape_hostile_names(tmp_path):
    store = tmp_path / "r.sqlite"
    with ResultsStore(store, create=True) as db:
        run = db.start_run(["test"], "local", 1)
        for k, name in enumerate(NAMES):
            inst = random_dag_instance(5, 3, seed=k)
            inst = type(inst).from_dict({**inst.to_dict(), "name": name, "source": NAMES[-1]})
            cell = make_cell(inst, "highs", seed=0, time_limit_s=1, suite="file", origin="x")
            db.add_cell(cell.to_spec(), fake_record(cell, 110.0, 100.0), run)
    out = tmp_path / "rep"
    make_report(store, out, plots=False)
    md = (out / "summary.md").read_text()
    assert "<script>" not in md and "&lt;script&gt;" in md
    table = [line for line in md.splitlines() if line.startswith("| ")]
    rows = [line for line in table if "| finished |" in line]
    assert len(rows) == len(NAMES), f"a name split a table row: {table}"
    widths = {line.replace("\\|", "").count("|") for line in rows}
    assert len(widths) == 1, f"a name split a table row: {table}"
    assert not any(line.startswith(("| a", "line1")) for line in md.splitlines())
    with open(out / "cells.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == len(NAMES)
    for row in rows:
        for value in row.values():
            assert not value.startswith(("=", "+", "@", "\t", "\r")), value
    assert {r["instance_name"] for r in rows} >= {"'" + FORMULA, "'" + NAMES[2]}


def test_csv_frame_leaves_numbers(tmp_path):
    import pandas as pd

    frame = csv_frame(pd.DataFrame({"x": [-1.0, 2.0], "name": ["-a", "b"]}))
    assert frame["x"].tolist() == [-1.0, 2.0] and frame["name"].tolist() == ["'-a", "b"]
