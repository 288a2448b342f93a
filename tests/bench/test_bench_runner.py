"""Batch solving in-process (registered methods only): store contents, restart, results."""

from __future__ import annotations

import json

import pytest

import energyopt
from energyopt.bench.runner import plan_cells, run_bench
from energyopt.bench.store import ResultsStore


def test_every_cell_once_with_the_methods_own_results(instance_files, tmp_path):
    store = tmp_path / "r.sqlite"
    cells = plan_cells(files=instance_files[:2], methods=["highs", "bruteforce"], time_limit_s=20)
    assert len(cells) == 2 * 2
    summary = run_bench(cells, store, jobs=2, progress=False)
    assert (summary.total, summary.skipped, summary.done, summary.failed) == (4, 0, 4, 0)
    with ResultsStore(store) as db:
        rows = db.rows()
        assert len(db) == 4
    for row in rows:
        inst = energyopt.load_instance(next(p for p in instance_files if str(p) == row["origin"]))
        direct = energyopt.solve(inst, row["method"], time_limit=20, seed=0)
        assert row["outcome"] == "finished"
        assert row["status"] == direct.status.value == "optimal"
        assert row["objective"] == pytest.approx(direct.objective, rel=1e-9)
        assert row["gap"] == 0.0
        stored = json.loads(row["result_json"])
        assert stored["solution"] == direct.to_dict()["solution"]
    # Exact methods agree on every instance (brute force is the reference).
    by_inst = {}
    for row in rows:
        by_inst.setdefault(row["instance_id"], []).append(row["objective"])
    for objs in by_inst.values():
        assert max(objs) - min(objs) <= 1e-6 * max(objs)


def test_restart_skips_finished_cells_and_adds_new_ones(instance_files, tmp_path):
    store = tmp_path / "r.sqlite"
    first = plan_cells(files=instance_files[:2], methods=["highs"], time_limit_s=20)
    run_bench(first, store, jobs=1, progress=False)
    with ResultsStore(store) as db:
        before = {r["cell_key"]: r["finished_at"] for r in db.rows()}
    both = plan_cells(files=instance_files, methods=["highs"], time_limit_s=20)
    summary = run_bench(both, store, jobs=1, progress=False)
    assert (summary.skipped, summary.done) == (2, 1)
    with ResultsStore(store) as db:
        after = {r["cell_key"]: r["finished_at"] for r in db.rows()}
        assert len(db.runs()) == 2
    assert len(after) == 3
    assert all(after[k] == v for k, v in before.items())  # untouched, not recomputed


def test_seeds_and_time_limits_are_separate_cells(instance_files):
    cells = plan_cells(files=instance_files[:1], methods=["cpsat"], seeds=[0, 1, 2], time_limit_s=5)
    assert len({c.key for c in cells}) == 3
    other = plan_cells(files=instance_files[:1], methods=["cpsat"], seeds=[0], time_limit_s=6)
    assert other[0].key not in {c.key for c in cells}


def test_unknown_method_and_empty_plans_are_clear_errors(instance_files):
    with pytest.raises(ValueError, match="no-such-method"):
        plan_cells(files=instance_files, methods=["no-such-method"])
    with pytest.raises(ValueError, match="nothing to run"):
        plan_cells()
    with pytest.raises(ValueError, match="time-limit"):
        plan_cells(files=instance_files, time_limit_s=0)


def test_fresh_interpreter_and_forked_worker_agree(instance_files):
    """The fallback for daemonic Dask workers (a fresh interpreter) gives the same record."""
    from energyopt.bench.cellclient import run_cell
    from energyopt.bench.cells import CellRecord

    (cell,) = plan_cells(files=instance_files[:1], methods=["bruteforce"], time_limit_s=20)
    forked = run_cell(cell.to_spec(), mode="fork")
    fresh = run_cell(cell.to_spec(), mode="subprocess")
    assert isinstance(forked, CellRecord) and isinstance(fresh, CellRecord)
    assert forked.outcome == fresh.outcome == "finished"
    for field in ("objective", "bound", "status", "termination", "solution"):
        assert forked.result[field] == fresh.result[field]


def test_failed_cells_are_retried_only_when_asked(tmp_path):
    from energyopt.pipeline import synthetic_instance

    # 10 clocks for each of 2 x 2 x 2 = 8 computations: 10^8 combinations, over the
    # brute-force limit, so the method ends at once with termination 'error'.
    path = tmp_path / "big.json"
    synthetic_instance(2, 2, 10, seed=0).to_json(path)
    store = tmp_path / "r.sqlite"
    cells = plan_cells(files=[path], methods=["bruteforce"], time_limit_s=20)
    first = run_bench(cells, store, progress=False)
    assert (first.done, first.failed) == (1, 1)
    again = run_bench(cells, store, progress=False)
    assert (again.skipped, again.done) == (1, 0)
    retry = run_bench(cells, store, retry_failed=True, progress=False)
    assert (retry.skipped, retry.done, retry.failed) == (0, 1, 1)
    with ResultsStore(store) as db:
        (row,) = db.rows()
        assert row["termination"] == "error" and "combinations" in row["message"]
        assert len(db.runs()) == 3
