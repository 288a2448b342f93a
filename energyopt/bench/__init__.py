"""Benchmark library, batch solving (local processes or Dask), results store and gap reports.

- :mod:`energyopt.bench.families`: which families provide suites, and their instances.
- :mod:`energyopt.bench.library`: the instance library under ``instances/`` and its index.
- :mod:`energyopt.bench.cells`: one (instance, method, seed) cell, its record, process control.
- :mod:`energyopt.bench.cellclient`: running one cell in a process of its own (forked from
  the warm :mod:`energyopt.bench.cellserver`, or a fresh interpreter).
- :mod:`energyopt.bench.provenance`: which code computed a cell (version, commit, sources).
- :mod:`energyopt.bench.store`: the SQLite results store (one committed row per finished cell).
- :mod:`energyopt.bench.executors`: local processes or Dask workers.
- :mod:`energyopt.bench.runner`: :func:`run_bench`, restartable batch solving.
- :mod:`energyopt.bench.frames`: a store as tidy DataFrames (:func:`read_results`).
- :mod:`energyopt.bench.report`: gap reports (HTML with embedded plots, Markdown, CSV).
- :mod:`energyopt.bench.demo`: the README's main job in one call.
"""

import importlib
from typing import Any

#: Public names and their modules, imported on first use (PEP 562): the CLI's parser
#: reads constants from the bench modules without paying for the runner, the store
#: or pandas (``energyopt --help``).
_EXPORTS = {
    "BenchSummary": "runner",
    "run_bench": "runner",
    "ResultsStore": "store",
    "StoreError": "store",
    "read_frontiers": "frames",
    "read_results": "frames",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"energyopt.bench.{module}"), name)
    globals()[name] = value
    return value
