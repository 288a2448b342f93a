"""The Dask executor (a LocalCluster) stores exactly what the local executor stores."""

from __future__ import annotations

import pytest

from energyopt.bench.families import families_with_suites, suite_instances
from energyopt.bench.runner import plan_cells, run_bench
from energyopt.bench.store import ResultsStore

pytest.importorskip("distributed")


def _smoke_files(tmp_path, instance_files):
    """The smoke suite's first instance of every family that has suites (a test-sized
    slice; ``benchmarks/bench_jobs.py`` compares the full suite), else tiny PEM files."""
    files = []
    for family in families_with_suites():
        inst = suite_instances(family, "smoke")[0]
        path = tmp_path / f"{family}-smoke-0.json"
        inst.to_json(path)
        files.append(path)
    return files or instance_files


def test_dask_local_cluster_matches_local_executor(tmp_path, instance_files):
    files = _smoke_files(tmp_path, instance_files)
    cells = plan_cells(files=files, time_limit_s=30)
    local, dask = tmp_path / "local.sqlite", tmp_path / "dask.sqlite"
    a = run_bench(cells, local, jobs=2, progress=False)
    b = run_bench(cells, dask, jobs=2, executor="dask", progress=False)
    assert a.done == b.done == len(cells) > 0
    with ResultsStore(local) as x, ResultsStore(dask) as y:
        assert x.contents() == y.contents()
        assert len(x.runs()) == len(y.runs()) == 1
        assert y.runs()[0]["executor"] == "dask"
