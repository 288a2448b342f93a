"""Where cells run: local threads each watching one worker process, or Dask workers.

Both executors call the same :func:`energyopt.bench.cells.run_cell`, which starts a
fresh process per cell and enforces its time limit; they differ only in who calls
it. Results come back to the calling process, the only one that writes the store.
"""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import threading
from collections.abc import Callable
from typing import Any, Protocol

from energyopt.bench.cells import allow_cells, kill_running, run_cell


class Handle(Protocol):
    def done(self) -> bool: ...
    def result(self) -> dict[str, Any]: ...
    def cancel(self) -> Any: ...


class Executor(Protocol):
    name: str

    def submit(self, spec: dict[str, Any]) -> Handle: ...
    def running(self) -> int: ...
    def close(self) -> None: ...


class LocalExecutor:
    """``jobs`` threads; each runs one cell at a time in its own process."""

    name = "local"

    def __init__(self, jobs: int, cell_runner: Callable[[dict[str, Any]], dict] = run_cell):
        if jobs < 1:
            raise ValueError(f"--jobs must be at least 1, got {jobs}")
        self._pool = cf.ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="bench")
        self._runner = cell_runner
        self._lock = threading.Lock()
        self._running = 0
        self._closed = False
        allow_cells()

    def _run(self, spec: dict[str, Any]) -> dict[str, Any]:
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

    The workers run :func:`run_cell`, which starts the cell's own process there; so
    every worker needs this package installed, and nothing else.
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
        self._futures: list[Any] = []

    def submit(self, spec: dict[str, Any]) -> Any:
        digest = hashlib.sha256(spec["key"].encode()).hexdigest()[:20]
        fut = self._client.submit(run_cell, spec, key=f"cell-{digest}", pure=False)
        self._futures.append(fut)
        return fut

    def running(self) -> int:
        """Cells in flight, at most one per worker thread (Dask does not say which run)."""
        pending = sum(not f.done() for f in self._futures)
        threads = sum(self._client.nthreads().values())
        return min(pending, threads)

    def close(self) -> None:
        for f in self._futures:
            if not f.done():
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
