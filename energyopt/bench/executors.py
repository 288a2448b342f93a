"""Where cells run: local threads each watching one worker process, or Dask workers.

Both executors run each cell in a process of its own, forked from a warm interpreter
(the local fork server, or a Dask worker's cell server), and enforce its time limit;
they differ only in who calls them. Results come back to the calling process, the only
one that writes the store.
"""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from energyopt.bench.cellclient import run_cell
from energyopt.bench.cells import CellRecord, allow_cells, kill_running, preloaded_modules


class Handle(Protocol):
    def done(self) -> bool: ...
    def result(self) -> CellRecord: ...
    def cancel(self) -> Any: ...
    def add_done_callback(self, fn: Callable[[Any], Any]) -> Any: ...


class Executor(Protocol):
    name: str

    def submit(self, spec: dict[str, Any]) -> Handle: ...
    def slots(self) -> int: ...
    def running(self) -> int: ...
    def close(self) -> None: ...


class LocalExecutor:
    """``jobs`` threads; each runs one cell at a time in its own process."""

    name = "local"

    def __init__(self, jobs: int, cell_runner: Callable[[dict[str, Any]], CellRecord] = run_cell):
        if jobs < 1:
            raise ValueError(f"--jobs must be at least 1, got {jobs}")
        self._jobs = jobs
        self._pool = cf.ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="bench")
        self._runner = cell_runner
        self._lock = threading.Lock()
        self._running = 0
        self._closed = False
        allow_cells()

    def _run(self, spec: dict[str, Any]) -> CellRecord:
        if self._closed:
            raise RuntimeError("executor closed")
        with self._lock:
            self._running += 1
        try:
            return self._runner(spec)
        finally:
            with self._lock:
                self._running -= 1

    def submit(self, spec: dict[str, Any]) -> cf.Future:
        return self._pool.submit(self._run, spec)

    def slots(self) -> int:
        """Cells that can run at the same time."""
        return self._jobs

    def running(self) -> int:
        return self._running

    def close(self) -> None:
        # Normally nothing is running here; after Ctrl-C, stop the cells still running.
        self._closed = True
        self._pool.shutdown(wait=False, cancel_futures=True)
        if self._running:
            kill_running()
        self._pool.shutdown(wait=True)


class DaskExecutor:
    """Cells as Dask tasks: a new ``LocalCluster`` with ``jobs`` single-thread workers,
    or the cluster whose scheduler listens at ``scheduler``.

    On a new ``LocalCluster`` the workers are threads of this process, and cells are forked
    from this process's cell server, as with the local executor. On an existing cluster
    each worker runs a warm cell server of its own (:mod:`energyopt.bench.cellserver`, started by a
    worker plugin) that imports the solver stack once and forks one process per cell; the
    workers need this package installed, and nothing else. Results come back here, the only
    place that writes the store. A worker that dies loses no stored cell: the scheduler runs
    its unfinished tasks on another worker.
    """

    name = "dask"

    def __init__(self, jobs: int, scheduler: str | None = None) -> None:
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise ValueError(
                "--executor dask needs the 'distributed' package (pip install energyopt[dask])"
            ) from None
        self._cluster = None
        if scheduler is None:
            # Threads suffice inside the workers: each cell has its own process anyway.
            self._cluster = LocalCluster(
                n_workers=jobs,
                threads_per_worker=1,
                processes=False,
                dashboard_address=None,
            )
            self._client = Client(self._cluster)
        else:
            try:
                self._client = Client(scheduler, timeout="20s")
            except OSError as exc:
                raise ValueError(f"--scheduler {scheduler}: cannot connect ({exc})") from None
            from energyopt.bench.daskplugin import CellServerPlugin

            self._client.register_plugin(CellServerPlugin(preloaded_modules()))
        self._pending: set[Any] = set()
        self._threads = (0.0, 1)

    def submit(self, spec: dict[str, Any]) -> Any:
        digest = hashlib.sha256(spec["key"].encode()).hexdigest()[:20]
        fut = self._client.submit(run_cell, spec, key=f"cell-{digest}", pure=False)
        self._pending.add(fut)
        fut.add_done_callback(self._pending.discard)
        return fut

    def slots(self) -> int:
        """Worker threads of the cluster now (asked at most once a second)."""
        when, threads = self._threads
        if time.monotonic() - when > 1.0:
            threads = max(1, sum(self._client.nthreads().values()))
            self._threads = (time.monotonic(), threads)
        return threads

    def running(self) -> int:
        """Cells in flight, at most one per worker thread (Dask does not say which run)."""
        return min(len(self._pending), self.slots())

    def close(self) -> None:
        for f in list(self._pending):
            f.cancel()
        self._client.close()
        if self._cluster is not None:
            self._cluster.close()


def make_executor(kind: str, jobs: int, scheduler: str | None = None) -> Executor:
    """``"local"`` or ``"dask"``."""
    if kind == "local":
        if scheduler is not None:
            raise ValueError("--scheduler applies to --executor dask only")
        return LocalExecutor(jobs)
    if kind == "dask":
        return DaskExecutor(jobs, scheduler)
    raise ValueError(f"--executor {kind!r}: expected 'local' or 'dask'")
