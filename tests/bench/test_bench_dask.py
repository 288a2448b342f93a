"""The Dask executor (a LocalCluster) stores exactly what the local executor stores."""

from __future__ import annotations

import pytest

from energyopt.bench.families import families_with_suites
from energyopt.bench.runner import plan_cells, run_bench
from energyopt.bench.store import ResultsStore

pytest.importorskip("distributed")


@pytest.mark.slow
def test_dask_local_cluster_matches_local_executor(tmp_path, instance_files):
    """The whole smoke suite (every family that has one, every method), else tiny PEM files."""
    if families_with_suites():
        cells = plan_cells(suite="smoke", time_limit_s=30)
    else:
        cells = plan_cells(files=instance_files, time_limit_s=30)
    local, dask = tmp_path / "local.sqlite", tmp_path / "dask.sqlite"
    a = run_bench(cells, local, jobs=2, progress=False)
    b = run_bench(cells, dask, jobs=2, executor="dask", progress=False)
    assert a.done == b.done == len(cells) > 0
    with ResultsStore(local) as x, ResultsStore(dask) as y:
        assert x.contents() == y.contents()
        assert len(x.runs()) == len(y.runs()) == 1
        assert y.runs()[0]["executor"] == "dask"
