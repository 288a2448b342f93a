"""Batch solving: every (instance, method, seed) cell once, restartable, in parallel.

:func:`plan_cells` turns suites or instance files into cells; :func:`run_bench`
runs the cells not yet in the store and commits each one as it finishes.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import queue
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from energyopt.bench.cellclient import start_server, stop_server, warm_cells
from energyopt.bench.cells import (
    CRASHED,
    DEFAULT_GRACE_S,
    Cell,
    CellRecord,
    make_cell,
    preload_families,
)
from energyopt.bench.claims import HEARTBEAT_S, Owner
from energyopt.bench.executors import make_executor
from energyopt.bench.families import families_with_suites, load_instance_file, suite_instances
from energyopt.bench.provenance import code_version, describe
from energyopt.bench.store import ResultsStore
from energyopt.core.registry import (
    check_options,
    check_options_known,
    get_method,
    unknown_options,
)
from energyopt.core.registry import methods as registered_methods


@dataclasses.dataclass(frozen=True)
class BenchSummary:
    """What one :func:`run_bench` call did."""

    run_id: str
    total: int
    skipped: int
    done: int
    failed: int
    killed: int
    wall_s: float
    #: Cells of this run that another ``bench`` process on the same store computed.
    elsewhere: int = 0
    #: Cells reused from the store that other code computed (another version, commit or
    #: source change), with the versions that computed them.
    stale: int = 0
    stale_versions: tuple[str, ...] = ()

    def __str__(self) -> str:
        others = f", {self.elsewhere} by another bench run" if self.elsewhere else ""
        text = (
            f"run {self.run_id}: {self.total} cells, {self.skipped} already in the store, "
            f"{self.done} run now ({self.failed} failed, {self.killed} killed at the time "
            f"limit){others} in {self.wall_s:.1f} s"
        )
        if self.stale:
            text += (
                f"\nreused {self.stale} stored cell(s) computed by other code "
                f"({'; '.join(self.stale_versions)}; this is {code_version()}): "
                "--recompute-stale computes them again"
            )
        return text


def load_plugins(plugins: Sequence[str]) -> None:
    """Import modules that register extra methods (in this process and in every worker)."""
    for name in plugins:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise ValueError(f"--plugin {name}: cannot import ({exc})") from None


def check_bench_arguments(
    *,
    suite: str | Sequence[str] | None,
    files: Sequence[str | Path],
    time_limit_s: float | None,
    grace_s: float = DEFAULT_GRACE_S,
    jobs: int = 1,
) -> None:
    """Raise ``ValueError`` for a batch's arguments that no planning can fix, before any
    work starts (no family imported, no cell server started)."""
    for name, value in (("--time-limit", time_limit_s), ("--grace", grace_s), ("--jobs", jobs)):
        if isinstance(value, bool) or not isinstance(value, (int, float, type(None))):
            raise ValueError(f"{name} = {value!r}: must be a number")
    if time_limit_s is not None and not (math.isfinite(time_limit_s) and time_limit_s > 0):
        raise ValueError(f"--time-limit = {time_limit_s!r}: must be a finite number of seconds > 0")
    if not (math.isfinite(grace_s) and grace_s >= 0):
        raise ValueError(f"--grace = {grace_s!r}: must be a finite number of seconds >= 0")
    if not isinstance(jobs, int):
        raise ValueError(f"--jobs = {jobs!r}: must be a whole number")
    if jobs < 1:
        raise ValueError(f"--jobs must be at least 1, got {jobs}")
    if not _suite_names(suite) and not files:
        raise ValueError("nothing to run: give --suite NAME and/or instance files")


def _suite_names(suite: str | Sequence[str] | None) -> list[str]:
    """The suite names of a ``suite`` argument (one name or several), each once, in order."""
    if suite is None:
        return []
    names = [suite] if isinstance(suite, str) else list(suite)
    for name in names:
        if not isinstance(name, str):
            raise ValueError(f"--suite = {name!r}: must be a suite name")
    return list(dict.fromkeys(names))


def plan_cells(
    *,
    suite: str | Sequence[str] | None = None,
    files: Sequence[str | Path] = (),
    families: Sequence[str] | None = None,
    methods: Sequence[str] | None = None,
    seeds: Sequence[int | None] = (0,),
    time_limit_s: float | None = 60.0,
    options: dict[str, Any] | None = None,
    plugins: Sequence[str] = (),
    grace_s: float = DEFAULT_GRACE_S,
    check_options: bool = False,
) -> list[Cell]:
    """All cells of a suite (every family that has suites) and/or of instance files.

    Parameters
    ----------
    suite
        Suite name (``smoke``, ``paper``) of every family with a suites module, or
        several names (each suite's cells, in order).
    files
        Instance JSON files (any family); a bad file raises :class:`InstanceError`.
    families
        Only these families.
    methods
        Method names; each family runs those of them it registers (a name no family
        registers is an error). ``None``: every registered method of each family.
    seeds, time_limit_s, options
        Passed to :func:`energyopt.solve` (the same options for every method).
    check_options
        Raise ``ValueError`` for an option that none of the selected methods takes.

    Planning runs in this process and imports the families it plans (their suites and
    registered methods). ``energyopt bench`` starts the cell server just before, once the
    arguments are checked, so that the server's imports overlap these.
    """
    check_bench_arguments(suite=suite, files=files, time_limit_s=time_limit_s, grace_s=grace_s)
    options = dict(options or {})
    load_plugins(plugins)
    sources = _sources(suite, files, families)
    wanted = list(dict.fromkeys(methods)) if methods else None
    seen: set[str] = set()
    cells: list[Cell] = []
    for inst, suite_name, origin in sources:
        known = registered_methods(inst.family, inst)  # those that run on this instance
        names = [m for m in wanted if m in known] if wanted is not None else sorted(known)
        seen.update(names)
        for method in names:
            for seed in seeds:
                cells.append(
                    make_cell(
                        inst,
                        method,
                        seed=seed,
                        time_limit_s=time_limit_s,
                        suite=suite_name,
                        origin=origin,
                        options=options,
                        plugins=tuple(plugins),
                        grace_s=grace_s,
                    )
                )
    if wanted is not None and set(wanted) - seen:
        fams = sorted({inst.family for inst, _, _ in sources})
        known = {f: sorted(registered_methods(f)) for f in fams}
        raise ValueError(
            f"method(s) {', '.join(sorted(set(wanted) - seen))} registered by no family here; "
            + "; ".join(f"{f}: {', '.join(ms)}" for f, ms in known.items())
        )
    if check_options:
        _check_options(cells, options)
    # The same instance may come twice (suite and file): one cell per key.
    return list({c.key: c for c in cells}.values())


def _check_options(cells: list[Cell], options: dict[str, Any]) -> None:
    """An option that none of the cells' methods takes is an error."""
    pairs = sorted({(c.family, c.method) for c in cells})
    chosen = [get_method(f, m) for f, m in pairs]
    check_options_known(chosen, options)
    for m in chosen:  # each method checks the options it takes, before any cell runs
        skip = set(unknown_options(m, options))
        check_options(m, {k: v for k, v in options.items() if k not in skip})


def _sources(
    suite: str | Sequence[str] | None,
    files: Sequence[str | Path],
    families: Sequence[str] | None,
) -> list[tuple[Any, str, str]]:
    """(instance, suite name or ``"file"``, origin) of every instance to run."""
    sources: list[tuple[Any, str, str]] = []
    names = _suite_names(suite)
    for name in names:
        for family in families_with_suites(families):
            for i, inst in enumerate(suite_instances(family, name)):
                sources.append((inst, name, f"{family}.suite({name!r})[{i}]"))
    for path in files:
        inst = load_instance_file(path)
        if families and inst.family not in families:
            continue
        sources.append((inst, "file", str(path)))
    if not sources:
        raise ValueError(
            f"no instances: no family provides suite {', '.join(map(repr, names))} yet"
            if names
            else "no instances in the given files for the selected families"
        )
    return sources


def run_bench(
    cells: Iterable[Cell],
    store: str | Path,
    *,
    jobs: int = 1,
    executor: str = "local",
    scheduler: str | None = None,
    retry_failed: bool = False,
    recompute_stale: bool = False,
    progress: bool = True,
    argv: Sequence[str] | None = None,
) -> BenchSummary:
    """Run every cell not yet in ``store``; commit each one the moment it finishes.

    Several processes may run on one store at the same time: each claims a cell before
    running it (:mod:`energyopt.bench.claims`), so they share the work, and each returns
    once every cell is in the store (it waits for the cells the others are running, and
    takes over those of a process that died).

    Parameters
    ----------
    cells
        From :func:`plan_cells`.
    store
        SQLite results store (created when missing).
    jobs
        Cells running at the same time (local threads, or Dask workers of a new
        ``LocalCluster``).
    executor, scheduler
        ``"local"`` or ``"dask"``; ``scheduler`` is the address of an existing Dask
        cluster (default: a new ``LocalCluster``).
    retry_failed
        Run again the cells stored as killed, crashed or errored.
    recompute_stale
        Run again the cells stored by other code (another version, commit or source
        change, :func:`energyopt.bench.provenance.code_version`); without it they are
        reused, and the summary says how many.
    progress
        Show a progress bar (cells done, running, failed) on standard error.

    Returns
    -------
    BenchSummary
    """
    cells = list(cells)
    tick = time.perf_counter()
    with ResultsStore(store, create=True) as db:
        stale = _stale(db, cells)
        expected = _expected(db, cells, retry_failed, stale if recompute_stale else {})
        todo = [c for c in cells if c.key in expected]
        reused = {k: v for k, v in stale.items() if k not in expected}
        run_id = db.start_run(argv if argv is not None else sys.argv, executor, jobs)
        db.add_instances(
            {
                c.instance_id: (c.instance_id, c.family, c.instance_name, c.instance_json)
                for c in todo
            }.values()
        )
        counts = _Counts()
        if todo:
            _run_todo(db, todo, expected, run_id, counts, executor, jobs, scheduler,
                      _progress_bar(len(todo), len(cells) - len(todo), progress))  # fmt: skip
    return BenchSummary(
        run_id,
        len(cells),
        len(cells) - len(todo),
        counts.done,
        counts.failed,
        counts.killed,
        time.perf_counter() - tick,
        counts.elsewhere,
        len(reused),
        tuple(sorted({describe(v) for v in reused.values()})),
    )


def _run_todo(
    db: ResultsStore,
    todo: list[Cell],
    expected: dict[str, str | None],
    run_id: str,
    counts: _Counts,
    executor: str,
    jobs: int,
    scheduler: str | None,
    bar: Any,
) -> None:
    """Run the cells still to do on a new executor, committing each one as it finishes."""
    preload_families(c.family for c in todo)
    if scheduler is not None:  # the workers run the cells: this process's server is not needed
        stop_server()
    elif warm_cells():  # cells run in this process's cell server
        start_server()
    ex = make_executor(executor, jobs, scheduler)
    try:
        _Driver(db, ex, Owner(run_id), bar, counts).run(todo, expected)
    finally:
        bar.close()
        ex.close()
        db.release_claims(run_id)


def _stale(db: ResultsStore, cells: list[Cell]) -> dict[str, str]:
    """Key -> stored code version of every planned cell that other code computed."""
    wanted = {c.key for c in cells}
    now = code_version()
    return {k: v for k, v in db.code_versions().items() if k in wanted and v != now}


def _expected(
    db: ResultsStore, cells: list[Cell], retry_failed: bool, stale: dict[str, str]
) -> dict[str, str | None]:
    """Key -> run id of its stored row (``None``: not stored) of every cell to run: those
    not stored, those stored as failed (with ``retry_failed``) and those in ``stale``."""
    stored = db.stored_runs()
    return {
        c.key: stored[c.key][0] if c.key in stored else None
        for c in cells
        if c.key not in stored or (retry_failed and stored[c.key][1]) or c.key in stale
    }


@dataclasses.dataclass
class _Counts:
    done: int = 0
    failed: int = 0
    killed: int = 0
    elsewhere: int = 0


class _Driver:
    """Claims cells, keeps the executor busy, commits each result as it arrives.

    At most ``slots`` cells (the executor's, doubled so that a worker never waits for this
    loop) are claimed and not yet stored at any time; the rest stay free for other runs.
    """

    def __init__(self, db: ResultsStore, ex: Any, owner: Owner, bar: Any, counts: _Counts):
        self.db, self.ex, self.owner, self.bar, self.counts = db, ex, owner, bar, counts
        self.finished: queue.Queue = queue.Queue()
        self.inflight: dict[Any, Cell] = {}
        self.shown = ""
        self.beat = time.monotonic()
        self.next_claim = 0.0

    def run(self, todo: list[Cell], expected: dict[str, str | None]) -> None:
        by_key = {c.key: c for c in todo}
        busy = 0
        while expected or self.inflight:
            room = 2 * self.ex.slots() - len(self.inflight)
            if expected and room > 0 and time.monotonic() >= self.next_claim:
                claimed, gone, busy = self.db.claim_cells(expected, self.owner, room)
                for key in gone:
                    del expected[key]
                    self._elsewhere()
                for key in claimed:
                    del expected[key]
                    self._submit(by_key[key])
                # Every remaining cell is another run's: look again in a while.
                self.next_claim = 0.0 if claimed else time.monotonic() + _WAIT_S
            self._show(busy)
            try:
                handle = self.finished.get(timeout=_WAIT_S)
            except queue.Empty:
                self._heartbeat()
                continue
            self._store(handle)
            self._heartbeat()

    def _submit(self, cell: Cell) -> None:
        handle = self.ex.submit(cell.to_spec())
        self.inflight[handle] = cell
        handle.add_done_callback(self.finished.put)

    def _store(self, handle: Any) -> None:
        cell = self.inflight.pop(handle)
        spec = cell.to_spec()
        try:
            record = handle.result()
        except Exception as exc:  # the executor failed, not the cell's method
            record = CellRecord.failed(spec, CRASHED, f"executor: {type(exc).__name__}: {exc}", 0.0)
        if not self.db.add_cell(spec, record, self.owner.run_id, claimed=True):
            self._elsewhere()  # another run took our claim over and stored it first
            return
        self.counts.done += 1
        # Each lost cell counts once: as killed (at its time limit) or as failed.
        self.counts.killed += record.killed
        self.counts.failed += record.lost and not record.killed
        self.bar.update(1)

    def _elsewhere(self) -> None:
        self.counts.elsewhere += 1
        self.bar.update(1)

    def _heartbeat(self) -> None:
        if time.monotonic() - self.beat >= HEARTBEAT_S:
            self.db.heartbeat(self.owner.run_id)
            self.beat = time.monotonic()

    def _show(self, busy: int) -> None:
        """Redraw the bar only when the counts change (keeps logs short)."""
        c = self.counts
        text = f"done={c.done} running={self.ex.running()} failed={c.failed}"
        if busy or c.elsewhere:
            text += f" other-runs={c.elsewhere}+{busy}"
        if text != self.shown:
            self.bar.set_postfix_str(text, refresh=True)
        self.shown = text


#: Seconds between two looks at the store while waiting for other runs' cells.
_WAIT_S = 0.5


def _progress_bar(total: int, skipped: int, enabled: bool) -> Any:
    if not enabled:
        # tqdm's import (25 ms of CPU, its version lookup reads package metadata) would
        # delay the first cell for a bar that is not shown.
        return _NoBar()
    from tqdm import tqdm

    desc = f"bench ({skipped} already done)" if skipped else "bench"
    return tqdm(total=total, desc=desc, unit="cell", file=sys.stderr)


class _NoBar:
    """The progress bar's interface, drawing nothing (progress off or not a terminal)."""

    def update(self, n: int = 1) -> None:
        pass

    def set_postfix_str(self, text: str = "", refresh: bool = True) -> None:
        pass

    def close(self) -> None:
        pass
