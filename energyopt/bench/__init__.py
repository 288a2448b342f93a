"""Benchmark library, batch solving (local processes or Dask), results store and gap reports.

- :mod:`energyopt.bench.families`: which families provide suites, and their instances.
- :mod:`energyopt.bench.library`: the instance library under ``instances/`` and its index.
- :mod:`energyopt.bench.cells`: one (instance, method, seed) cell and the process that runs it.
- :mod:`energyopt.bench.store`: the SQLite results store (one committed row per finished cell).
- :mod:`energyopt.bench.executors`: local processes or Dask workers.
- :mod:`energyopt.bench.runner`: :func:`run_bench`, restartable batch solving.
- :mod:`energyopt.bench.frames`: a store as tidy DataFrames (:func:`read_results`).
- :mod:`energyopt.bench.report`: gap reports (HTML with embedded plots, Markdown, CSV).
- :mod:`energyopt.bench.demo`: the README's main job in one call.
"""

from energyopt.bench.runner import BenchSummary, run_bench
from energyopt.bench.store import ResultsStore, StoreError

__all__ = ["BenchSummary", "ResultsStore", "StoreError", "read_results", "run_bench"]


def __getattr__(name: str):
    # pandas loads only when a store is read as a frame.
    if name == "read_results":
        from energyopt.bench.frames import read_results

        return read_results
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
