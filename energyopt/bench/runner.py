"""Batch solving: every (instance, method, seed) cell once, restartable, in parallel.

:func:`plan_cells` turns suites or instance files into cells; :func:`run_bench`
runs the cells not yet in the store and commits each one as it finishes.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from energyopt.bench.cells import (
    CRASHED,
    DEFAULT_GRACE_S,
    FINISHED,
    KILLED,
    Cell,
    make_cell,
    preload_families,
    start_fork_server,
)
from energyopt.bench.executors import make_executor
from energyopt.bench.families import families_with_suites, load_instance_file, suite_instances
from energyopt.bench.store import ResultsStore
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

    def __str__(self) -> str:
        return (
            f"run {self.run_id}: {self.total} cells, {self.skipped} already in the store, "
            f"{self.done} run now ({self.failed} failed, {self.killed} killed at the time "
            f"limit) in {self.wall_s:.1f} s"
        )


def load_plugins(plugins: Sequence[str]) -> None:
    """Import modules that register extra methods (in this process and in every worker)."""
    for name in plugins:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise ValueError(f"--plugin {name}: cannot import ({exc})") from None


def plan_cells(
    *,
    suite: str | None = None,
    files: Sequence[str | Path] = (),
    families: Sequence[str] | None = None,
    methods: Sequence[str] | None = None,
    seeds: Sequence[int | None] = (0,),
    time_limit_s: float | None = 60.0,
    options: dict[str, Any] | None = None,
    plugins: Sequence[str] = (),
    grace_s: float = DEFAULT_GRACE_S,
) -> list[Cell]:
    """All cells of a suite (every family that has suites) and/or of instance files.

    Parameters
    ----------
    suite
        Suite name (``smoke``, ``paper``) of every family with a suites module.
    files
        Instance JSON files (any family); a bad file raises :class:`InstanceError`.
    families
        Only these families.
    methods
        Method names; each family runs those of them it registers (a name no family
        registers is an error). ``None``: every registered method of each family.
    seeds, time_limit_s, options
        Passed to :func:`energyopt.solve` (the same options for every method).
    """
    if time_limit_s is not None and not (math.isfinite(time_limit_s) and time_limit_s > 0):
        raise ValueError(f"--time-limit = {time_limit_s!r}: must be a finite number of seconds > 0")
    if not (math.isfinite(grace_s) and grace_s >= 0):
        raise ValueError(f"--grace = {grace_s!r}: must be a finite number of seconds >= 0")
    if suite is None and not files:
        raise ValueError("nothing to run: give --suite NAME and/or instance files")
    if time_limit_s is not None and not time_limit_s > 0:
        raise ValueError(f"--time-limit must be positive, got {time_limit_s}")
    load_plugins(plugins)
    sources: list[tuple[Any, str, str]] = []
    if suite is not None:
        for family in families_with_suites(families):
            for i, inst in enumerate(suite_instances(family, suite)):
                sources.append((inst, suite, f"{family}.suite({suite!r})[{i}]"))
    for path in files:
        inst = load_instance_file(path)
        if families and inst.family not in families:
            continue
        sources.append((inst, "file", str(path)))
    if not sources:
        raise ValueError(
            f"no instances: no family provides suite {suite!r} yet"
            if suite is not None
            else "no instances in the given files for the selected families"
        )
    wanted = list(dict.fromkeys(methods)) if methods else None
    seen: set[str] = set()
    cells: list[Cell] = []
    for inst, suite_name, origin in sources:
        known = registered_methods(inst.family)
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
    # The same instance may come twice (suite and file): one cell per key.
    return list({c.key: c for c in cells}.values())


def run_bench(
    cells: Iterable[Cell],
    store: str | Path,
    *,
    jobs: int = 1,
    executor: str = "local",
    scheduler: str | None = None,
    retry_failed: bool = False,
    progress: bool = True,
    argv: Sequence[str] | None = None,
) -> BenchSummary:
    """Run every cell not yet in ``store``; commit each one the moment it finishes.

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
    progress
        Show a progress bar (cells done, running, failed) on standard error.

    Returns
    -------
    BenchSummary
    """
    cells = list(cells)
    tick = time.perf_counter()
    with ResultsStore(store, create=True) as db:
        stored = db.cell_outcomes()
        if retry_failed:
            failed_before = db.failed_keys()
            stored = {k: o for k, o in stored.items() if k not in failed_before}
        todo = [c for c in cells if c.key not in stored]
        skipped = len(cells) - len(todo)
        run_id = db.start_run(argv if argv is not None else sys.argv, executor, jobs)
        db.add_instances(
            {
                c.instance_id: (c.instance_id, c.family, c.instance_name, c.instance_json)
                for c in todo
            }.values()
        )
        done = failed = killed = 0
        if todo:
            preload_families(c.family for c in todo)
            if executor == "local":
                start_fork_server()
            ex = make_executor(executor, jobs, scheduler)
            bar = _progress_bar(len(todo), skipped, progress)
            shown = ""
            try:
                pending = {ex.submit(c.to_spec()): c for c in todo}
                while pending:
                    finished = [h for h in pending if h.done()]
                    if not finished:
                        shown = _show(bar, _postfix(done, ex.running(), failed), shown)
                        time.sleep(0.05)
                        continue
                    for h in finished:
                        cell = pending.pop(h)
                        try:
                            record = h.result()
                        except Exception as exc:  # the executor failed, not the cell's method
                            record = {
                                "key": cell.key,
                                "outcome": CRASHED,
                                "result": None,
                                "message": f"executor: {type(exc).__name__}: {exc}",
                                "wall_s": 0.0,
                            }
                        db.add_cell(cell.to_spec(), record, run_id)
                        done += 1
                        killed += record["outcome"] == KILLED
                        failed += _failed(record)
                        bar.update(1)
                    shown = _show(bar, _postfix(done, ex.running(), failed), shown)
            finally:
                bar.close()
                ex.close()
    return BenchSummary(
        run_id, len(cells), skipped, done, failed, killed, time.perf_counter() - tick
    )


def _failed(record: dict[str, Any]) -> bool:
    if record["outcome"] != FINISHED:
        return True
    return record["result"].get("termination") == "error"


def _show(bar: Any, text: str, shown: str) -> str:
    """Redraw the bar only when the counts change (keeps logs short)."""
    if text != shown:
        bar.set_postfix_str(text, refresh=True)
    return text


def _postfix(done: int, running: int, failed: int) -> str:
    return f"done={done} running={running} failed={failed}"


def _progress_bar(total: int, skipped: int, enabled: bool) -> Any:
    from tqdm import tqdm

    desc = f"bench ({skipped} already done)" if skipped else "bench"
    return tqdm(total=total, desc=desc, unit="cell", disable=not enabled, file=sys.stderr)
