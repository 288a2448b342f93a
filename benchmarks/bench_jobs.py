"""Whole ``energyopt bench`` runs: ``--jobs 1`` against ``--jobs 2``, and a localhost Dask cluster.

Every measurement is a whole command line, ``python -m energyopt.cli bench ...``, run as
a subprocess into a fresh store and timed from its start to its exit: interpreter start,
imports, planning, the cell server's start and every cell are included. Repetitions
alternate the configurations so that background load hits them alike; the table gives
the median and minimum wall-clock time of each and the speed-up of the medians against
``--jobs 1``.

With ``--dask`` a localhost cluster is started first (``dask scheduler`` and two
``dask worker --nthreads 1`` processes, as a user would) and the same command runs with
``--executor dask --scheduler ADDRESS``; the cluster's start-up is not timed (it exists
before the run, as on a batch system), but the workers' cell servers start with the first
run, which is shown apart.

Per-cell overhead is read from the stores: a cell's wall-clock time (fork, loading the
instance, solving, the result's return) minus the method's own ``runtime_s``, leaving out
the first cell of each run. Finally every store must hold the same contents
(``ResultsStore.contents()``: everything but timings).

    python benchmarks/bench_jobs.py [--suite smoke] [--seeds 0] [--repeat 3] [--dask]
                                    [--time-limit 30] [--grace S] [--baseline TREE]
                                    [--server-starts N]

With ``--baseline TREE`` the same ``--jobs 1`` and ``--jobs 2`` runs of another source tree
(``git worktree add TREE main``) are interleaved with these, so that a change is compared
with its baseline under the same load.

The serial part of a run (what ``--jobs 2`` cannot share) is printed as an Amdahl bound
from the ``--jobs 1`` runs, and the cell server's start, the longest part of it, is timed
apart ``--server-starts`` times per tree in CPU seconds, which the load inflates less than
wall-clock time.

A second bound comes from CPU: the CPU seconds of the run's own processes. The benchmark
makes itself the subreaper of everything it starts (``prctl(PR_SET_CHILD_SUBREAPER)``, Linux),
so that the cell server, which outlives the ``bench`` command by a moment, and its forked
cells are reparented here when their parent ends; it waits for every one of them to end and
reads their CPU from ``getrusage(RUSAGE_CHILDREN)``: the command, the server, its spares and
every cell, and nothing else. With one job a run keeps more than one core busy, and two jobs
cannot take less than that CPU divided by the cores. (With ``--dask`` the cells run in the
cluster's workers, which outlive the runs: no own CPU is given for those.)

Beside every figure goes the machine's load: the 1-minute load average at each run's start
and end (median over the runs), and the machine's busy CPU seconds across the runs
(``/proc/stat``, every process's): a busy machine shrinks speed-ups.
"""

from __future__ import annotations

import argparse
import ctypes
import datetime as _dt
import json
import os
import platform
import resource
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import energyopt
from energyopt.bench.store import CONTENT_COLUMNS, ResultsStore
from energyopt.core.registry import FAMILY_MODULES
from energyopt.core.table import format_table

ROOT = Path(__file__).resolve().parents[1]


def bench_run(args: argparse.Namespace, store: Path, extra: list[str], root: Path = ROOT) -> float:
    """Wall-clock seconds of one whole ``energyopt bench`` command of the source tree ``root``."""
    cmd = [
        sys.executable, "-m", "energyopt.cli", "bench", "--suite", args.suite,
        "--seeds", *map(str, args.seeds), "--time-limit", str(args.time_limit),
        "--store", str(store), "--no-progress", *extra,
    ]  # fmt: skip
    if args.grace is not None:
        cmd += ["--grace", str(args.grace)]
    LAUNCHED[store] = time.time()
    load = os.getloadavg()[0]
    busy = busy_cpu_seconds()
    own = children_cpu_seconds()
    tick = time.perf_counter()
    run = subprocess.run(cmd, capture_output=True, text=True, cwd=root, env=_env(root))
    wall = time.perf_counter() - tick
    ENDED[store] = time.time()
    reap_left_behind()  # the cell server and its spares, reparented here
    if SUBREAPER and not extra_runs_elsewhere(extra):
        OWN[store] = children_cpu_seconds() - own
    if busy is not None:
        BUSY[store] = busy_cpu_seconds() - busy
    LOAD[store] = (load, os.getloadavg()[0])
    if run.returncode not in (0, 1):  # 1: some cells failed, which the contents check shows
        raise SystemExit(f"bench failed ({run.returncode}): {run.stderr.strip()[-500:]}")
    return wall


#: Store -> Unix time at which its ``bench`` command was launched, and at which it ended
#: (its output closed: the cell server, which shares it, had exited too).
LAUNCHED: dict[Path, float] = {}
ENDED: dict[Path, float] = {}
#: Store -> CPU seconds the whole machine was busy during its run (Linux): every
#: process's, the other users' included; shown beside the run's own as the machine's load.
BUSY: dict[Path, float] = {}
#: Store -> CPU seconds of the run's own processes (the command and all it started).
OWN: dict[Path, float] = {}
#: Store -> the machine's 1-minute load average at the run's start and end.
LOAD: dict[Path, tuple[float, float]] = {}
#: Processes of the Dask cluster: started here, but not the runs' (left running).
CLUSTER_PIDS: set[int] = set()
#: ``prctl`` option that makes this process the reaper of its orphaned descendants.
PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Make this process the parent of every orphan among its descendants (Linux 3.4+), so
    that their CPU can be waited for and counted here; ``False`` where that is not possible."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


SUBREAPER = False


def children_cpu_seconds() -> float:
    """User + system CPU seconds of every descendant that has ended and been waited for."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _children() -> set[int]:
    """Pids of this process's living children (``/proc``)."""
    me, out = os.getpid(), set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me:
            out.add(int(stat.parent.name))
    return out


def reap_left_behind(timeout_s: float = 120.0) -> None:
    """Wait until every process a run left behind (reparented here) has ended, and reap it,
    so that its CPU is in :func:`children_cpu_seconds`. The cluster's processes stay."""
    if not SUBREAPER:
        return
    deadline = time.monotonic() + timeout_s
    while True:
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                break
        left = _children() - CLUSTER_PIDS
        if not left:
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"processes left behind by the run: {sorted(left)}")
        time.sleep(0.01)


def extra_runs_elsewhere(extra: list[str]) -> bool:
    """Whether the cells of a run with these arguments run in a cluster's processes."""
    return "--scheduler" in extra


def busy_cpu_seconds() -> float | None:
    """CPU seconds all cores have been busy since boot (``/proc/stat``), ``None`` elsewhere:
    every process's, so the machine's load, not the run's CPU (that is :data:`OWN`)."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    except OSError:
        return None
    user, nice, system, _idle, _iowait, irq, softirq = (int(x) for x in fields[:7])
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def _env(root: Path = ROOT) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), env.get("PYTHONPATH", "")) if p)
    return env


def overheads(store: Path) -> list[float]:
    """Wall-clock time minus the method's runtime of every cell but the first to finish."""
    db = sqlite3.connect(store)
    rows = db.execute(
        "SELECT wall_s - runtime_s FROM cells WHERE runtime_s IS NOT NULL ORDER BY finished_at"
    ).fetchall()
    db.close()
    return [r[0] for r in rows[1:]]


def phases(store: Path) -> tuple[float, float, float, float]:
    """Seconds from the command's launch to its first cell's start (start-up: interpreter,
    imports, planning, cell server), from then to the last cell's end, the sum of the
    cells' wall-clock times (the work that jobs can share), and from the last cell's end
    to the command's (the store's last commit, the summary, the processes' exit)."""
    db = sqlite3.connect(store)
    rows = db.execute("SELECT finished_at, wall_s FROM cells").fetchall()
    db.close()
    ends = [_dt.datetime.fromisoformat(f).timestamp() for f, _ in rows]
    first = min(e - w for e, (_, w) in zip(ends, rows))
    last = max(ends)
    return first - LAUNCHED[store], last - first, sum(w for _, w in rows), ENDED[store] - last


def server_start(root: Path) -> tuple[float, float]:
    """Wall-clock and CPU seconds (from ``/proc``) of one cell server of the source tree
    ``root``, every family preloaded as ``bench`` does, from its launch to its ``ready``:
    the imports and forks that every run waits for before its first cell, in CPU time,
    which the other sessions' load does not inflate as it does wall-clock time."""
    families = list(FAMILY_MODULES.values())
    with tempfile.TemporaryDirectory() as tmp:
        tick = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "energyopt.bench.cellserver", f"{tmp}/s.sock", *families],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=root, env=_env(root),
        )  # fmt: skip
        proc.stdout.readline()
        wall = time.perf_counter() - tick
        fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime
        proc.stdin.close()  # the server exits when its input closes
        proc.wait(30)
        reap_left_behind()  # its spares, reparented here
    return wall, cpu


def server_starts(args: argparse.Namespace) -> None:
    """Median wall-clock and CPU time of ``args.server_starts`` cell server starts of this
    tree (and of the baseline, alternating)."""
    trees = {"this tree": ROOT, **({"baseline": Path(args.baseline)} if args.baseline else {})}
    times: dict[str, list[tuple[float, float]]] = {label: [] for label in trees}
    for _ in range(args.server_starts):
        for label, root in trees.items():
            times[label].append(server_start(root))
    for label, ts in times.items():
        walls, cpus = zip(*ts)
        print(
            f"cell server, launch to ready ({label}, median of {len(ts)}): "
            f"CPU {statistics.median(cpus):.2f} s (min {min(cpus):.2f}), "
            f"wall-clock {statistics.median(walls):.2f} s"
        )


class LocalCluster:
    """``dask scheduler`` and two single-thread ``dask worker`` processes on localhost."""

    def __init__(self, tmp: Path) -> None:
        sched_file = tmp / "scheduler.json"
        dask = [sys.executable, "-m", "dask"]
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "env": _env()}
        self.procs = [
            subprocess.Popen([*dask, "scheduler", "--host", "127.0.0.1", "--port", "0",
                              "--no-dashboard", "--scheduler-file", str(sched_file)],
                             start_new_session=True, **quiet)
        ]  # fmt: skip
        CLUSTER_PIDS.add(self.procs[0].pid)
        deadline = time.monotonic() + 60
        self.address = None
        while self.address is None:  # the file exists before it is written whole
            try:
                self.address = json.loads(sched_file.read_text())["address"]
            except (FileNotFoundError, json.JSONDecodeError, KeyError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        for i in range(2):
            self.procs.append(
                subprocess.Popen([*dask, "worker", self.address, "--nthreads", "1",
                                  "--no-dashboard", "--host", "127.0.0.1", "--name", f"w{i}"],
                                 start_new_session=True, **quiet)
            )  # fmt: skip
            CLUSTER_PIDS.add(self.procs[-1].pid)
        from distributed import Client

        with Client(self.address, timeout="60s") as client:
            client.wait_for_workers(2, timeout=60)

    def close(self) -> None:
        for p in reversed(self.procs):
            os.killpg(p.pid, signal.SIGTERM)
        for p in self.procs:
            p.wait(30)


def measure(args: argparse.Namespace, tmp: Path) -> tuple[dict, dict, dict]:
    configs = {"--jobs 1": (ROOT, ["--jobs", "1"]), "--jobs 2": (ROOT, ["--jobs", "2"])}
    if args.baseline:
        for jobs in ("1", "2"):
            configs[f"baseline --jobs {jobs}"] = (Path(args.baseline), ["--jobs", jobs])
    cluster = LocalCluster(tmp) if args.dask else None
    if cluster is not None:
        dask = ["--executor", "dask", "--scheduler", cluster.address]
        first = tmp / "dask-first.sqlite"
        walls = {"dask, 2 workers (first run)": [bench_run(args, first, dask)]}
        configs["dask, 2 workers"] = (ROOT, dask)
        stores = {"dask, 2 workers (first run)": [first]}
    else:
        walls, stores = {}, {}
    try:
        for rep in range(args.repeat):
            for label, (root, extra) in configs.items():
                store = tmp / f"{label.replace(' ', '_').replace(',', '')}-{rep}.sqlite"
                walls.setdefault(label, []).append(bench_run(args, store, extra, root))
                stores.setdefault(label, []).append(store)
    finally:
        if cluster is not None:
            cluster.close()
    over = {label: [o for s in ss for o in overheads(s)] for label, ss in stores.items()}
    return walls, stores, over


def report(walls: dict, stores: dict, over: dict) -> None:
    jobs2 = statistics.median(walls["--jobs 2"])
    rows = []
    for label, ws in walls.items():
        med = statistics.median(ws)
        ov = over[label]
        start, span, work, _ = (statistics.median(x) for x in zip(*map(phases, stores[label])))
        # a baseline's speed-up is against its own --jobs 1
        base = statistics.median(walls["baseline --jobs 1" if "baseline" in label else "--jobs 1"])
        own = [OWN[s] for s in stores[label] if s in OWN]
        loads = [x for s in stores[label] if s in LOAD for x in LOAD[s]]
        rows.append([
            label, len(ws), f"{med:.2f}", f"{min(ws):.2f}", f"{base / med:.2f}x",
            f"{med / jobs2:.2f}", f"{1e3 * statistics.median(ov):.1f}",
            f"{1e3 * statistics.mean(ov):.1f}", f"{start:.2f}", f"{span:.2f}", f"{work:.2f}",
            f"{statistics.median(own):.2f}" if own else "n/a",
            f"{statistics.median(loads):.2f}" if loads else "n/a",
        ])  # fmt: skip
    heads = ["run", "runs", "median wall (s)", "min wall (s)", "speed-up vs --jobs 1",
             "wall / --jobs 2", "cell overhead median (ms)", "mean (ms)",
             "start-up (s)", "cells span (s)", "sum of cell walls (s)", "own CPU (s)",
             "load avg"]  # fmt: skip
    print(format_table(heads, rows))
    amdahl(walls, stores)
    cpu_ceiling(walls, stores)
    contents = {}
    for label, ss in stores.items():
        for i, s in enumerate(ss):
            with ResultsStore(s) as db:
                contents[(label, i)] = db.contents()
    first = next(iter(contents.values()))
    same = all(c == first for c in contents.values())
    print(f"store contents identical across all {len(contents)} runs: {same}")
    if not same:
        for run, c in contents.items():
            for x, y in zip(first, c):
                if x != y:
                    diff = [(col, u, v) for col, u, v in zip(CONTENT_COLUMNS, x, y) if u != v]
                    print(f"  {run}: {x[0]}: {diff}")


def amdahl(walls: dict, stores: dict) -> None:
    """The most ``--jobs 2`` can gain on two cores, from the ``--jobs 1`` runs (of this
    tree, and of the baseline's where given): all but the cells' wall-clock times is
    serial (start-up before the first cell, the end after the last), and the cells at best
    split evenly between two jobs at no extra cost."""
    for label in ("--jobs 1", "baseline --jobs 1"):
        if label in walls:
            _amdahl(label, statistics.median(walls[label]), stores[label])


def _amdahl(label: str, wall: float, stores: list[Path]) -> None:
    start, _, work, end = (statistics.median(x) for x in zip(*map(phases, stores)))
    serial = wall - work
    print(
        f"Amdahl, from {label} (medians): {wall:.2f} s = {serial:.2f} s serial (start-up "
        f"{start:.2f} s, end {end:.2f} s, between the cells {serial - start - end:.2f} s) + "
        f"{work:.2f} s "
        f"of cells; two jobs at best {serial:.2f} + {work:.2f} / 2 = {serial + work / 2:.2f} s: "
        f"at most {wall / (serial + work / 2):.2f}x"
    )


def cpu_ceiling(walls: dict, stores: dict) -> None:
    """The most ``--jobs 2`` can gain from the CPU the ``--jobs 1`` runs' own processes used.

    With one job a run already keeps more than one core busy (the cell server forks the
    next cell's process and reaps the last one while a cell runs, and the command plans
    while the server imports); two jobs need at least that CPU, so on ``os.cpu_count()``
    cores they take at least own CPU / cores. The machine's busy CPU and load average are
    printed beside it: the other processes' share of the same cores.
    """
    cores = os.cpu_count() or 1
    for label in ("--jobs 1", "--jobs 2"):
        own = [OWN[s] for s in stores.get(label, []) if s in OWN]
        if not own:
            print(f"{label}: no own CPU (not Linux, or no subreaper)")
            return
        cpu, wall = statistics.median(own), statistics.median(walls[label])
        busy = [BUSY[s] for s in stores[label] if s in BUSY]
        loads = [x for s in stores[label] for x in LOAD.get(s, ())]
        machine = (
            f"; the machine was busy {statistics.median(busy):.2f} CPU-s over the same runs, "
            f"load average {min(loads):.2f}-{max(loads):.2f}"
            if busy and loads
            else ""
        )
        print(f"own CPU of {label} (median): {cpu:.2f} CPU-s in {wall:.2f} s "
              f"({cpu / wall:.2f} cores of {cores}){machine}")  # fmt: skip
    cpu1 = statistics.median(OWN[s] for s in stores["--jobs 1"] if s in OWN)
    wall1 = statistics.median(walls["--jobs 1"])
    print(
        f"CPU bound: two jobs need at least {cpu1:.2f} own CPU-s / {cores} cores = "
        f"{cpu1 / cores:.2f} s: at most {wall1 / (cpu1 / cores):.2f}x"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", default="smoke")
    ap.add_argument("--seeds", nargs="+", type=int, default=[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--time-limit", type=float, default=30.0)
    ap.add_argument("--grace", type=float, default=None, help="bench's --grace (default its own)")
    ap.add_argument("--dask", action="store_true", help="also on a localhost Dask cluster")
    ap.add_argument(
        "--baseline",
        metavar="TREE",
        help="also time the source tree TREE (e.g. a `git worktree` of main), interleaved",
    )
    ap.add_argument(
        "--server-starts",
        type=int,
        default=5 if Path("/proc/self/stat").exists() else 0,
        metavar="N",
        help="also time N cell server starts per tree, in CPU seconds (Linux; default 5)",
    )
    args = ap.parse_args()
    global SUBREAPER
    SUBREAPER = become_subreaper()
    print(
        f"suite {args.suite!r}, seeds {args.seeds}: whole `energyopt bench` runs; "
        f"energyopt {energyopt.__version__}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, load average before {os.getloadavg()[0]:.2f}; "
        f"own CPU {'measured (subreaper)' if SUBREAPER else 'not measured (no subreaper)'}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        walls, stores, over = measure(args, Path(tmp))
        with ResultsStore(stores["--jobs 1"][0]) as db:
            print(f"{len(db)} cells per run")
        report(walls, stores, over)
    if args.server_starts:
        server_starts(args)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
