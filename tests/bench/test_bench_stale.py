"""The store records which code computed each cell; ``bench`` says when it reuses cells
of other code and recomputes them on request (issue 27: stale results)."""

from __future__ import annotations

import sqlite3

from energyopt.bench import provenance
from energyopt.bench.runner import plan_cells, run_bench
from energyopt.bench.store import ResultsStore

OTHER = "0.0.9 commit=0123456789ab sources=ba9876543210"


def _versions(store) -> list[str]:
    with ResultsStore(store) as db:
        return sorted(db.code_versions().values())


def test_cells_record_the_running_code_and_stale_ones_are_reported(instance_files, tmp_path):
    store = tmp_path / "r.sqlite"
    cells = plan_cells(files=instance_files[:2], methods=["bruteforce"], time_limit_s=20)
    first = run_bench(cells, store, progress=False)
    assert first.done == 2 and first.stale == 0
    assert _versions(store) == [provenance.code_version()] * 2
    assert "other code" not in str(first)

    with sqlite3.connect(store) as db:  # one cell as if computed by another version
        db.execute("UPDATE cells SET code_version = ? WHERE cell_key = ?", (OTHER, cells[0].key))
    reused = run_bench(cells, store, progress=False)
    assert (reused.skipped, reused.done, reused.stale) == (2, 0, 1)
    assert reused.stale_versions == (OTHER,)
    text = str(reused)
    assert "reused 1 stored cell(s) computed by other code" in text
    assert OTHER in text and "--recompute-stale" in text

    again = run_bench(cells, store, progress=False, recompute_stale=True)
    assert (again.skipped, again.done, again.stale) == (1, 1, 0)
    assert _versions(store) == [provenance.code_version()] * 2


def test_a_store_from_before_the_column_gets_it_and_reads_as_unrecorded(instance_files, tmp_path):
    store = tmp_path / "r.sqlite"
    cells = plan_cells(files=instance_files[:1], methods=["bruteforce"], time_limit_s=20)
    run_bench(cells, store, progress=False)
    with sqlite3.connect(store) as db:
        db.execute("ALTER TABLE cells DROP COLUMN code_version")
    with ResultsStore(store, read_only=True) as db:  # read-only: no migration, still readable
        assert db.code_versions() == {cells[0].key: ""}
    summary = run_bench(cells, store, progress=False)  # opening for writing adds the column
    assert summary.stale == 1 and summary.stale_versions == ("unrecorded",)
    assert _versions(store) == [""]


def test_the_code_version_changes_with_any_source_change(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "a.py").write_text("x = 1\n")
    before = provenance._digest(pkg)
    assert provenance._digest(pkg) == before  # deterministic
    (pkg / "a.py").write_text("x = 2\n")
    assert provenance._digest(pkg) != before
    assert provenance._git_commit(tmp_path) is None  # not a checkout
