"""Two ``energyopt bench`` processes on one store share the work (issue 13).

Real processes, started together on a new store and on a store that already holds some
cells: every cell ends in the store exactly once and is computed exactly once (an
execution log counts the runs of the test plugin's method). When one of the two is
SIGKILLed mid-run, the other takes its cells over: none is lost.
"""

from __future__ import annotations

import collections
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time

from benchutil import HERE, PLUGIN, ROOT, cli

SEEDS = ("0", "1", "2", "3")


def _args(files, store, *, seeds=SEEDS, jobs="1"):
    return [
        "bench", *map(str, files), "-m", "test-sleep", "--seeds", *seeds,
        "-o", "sleep_s=0.3", "--time-limit", "30", "--jobs", jobs,
        "--plugin", PLUGIN, "--store", str(store), "--no-progress",
    ]  # fmt: skip


def _start(args, log):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), str(ROOT), env.get("PYTHONPATH", "")])
    env["BENCH_TEST_LOG"] = str(log)
    return subprocess.Popen(
        [sys.executable, "-m", "energyopt.cli", *args],
        env=env,
        cwd=ROOT,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _stored(store):
    db = sqlite3.connect(store, timeout=30)
    rows = db.execute("SELECT cell_key, run_id FROM cells").fetchall()
    claims = db.execute("SELECT COUNT(*) FROM claims").fetchone()[0]
    db.close()
    return rows, claims


def _counts(stdout):
    """(total, already stored, run now, run by the other process) from the summary line."""
    m = re.search(r"(\d+) cells, (\d+) already in the store, (\d+) run now .*?(?:, (\d+) by "
                  r"another bench run)? in ", stdout)  # fmt: skip
    assert m, stdout
    return tuple(int(g or 0) for g in m.groups())


def _check_once(store, log, total):
    rows, claims = _stored(store)
    keys = [k for k, _ in rows]
    assert len(keys) == len(set(keys)) == total  # none lost, none stored twice
    assert claims == 0  # every claim released
    runs = collections.Counter(log.read_text().splitlines())
    return runs


def test_two_runs_on_a_new_store_share_the_cells(instance_files, tmp_path):
    store, log = tmp_path / "r.sqlite", tmp_path / "runs.log"
    procs = [_start(_args(instance_files, store), log) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err for _, err in outs]
    total = len(instance_files) * len(SEEDS)
    runs = _check_once(store, log, total)
    assert len(runs) == total and set(runs.values()) == {1}  # each cell computed once
    a, b = (_counts(out) for out, _ in outs)
    assert a[0] == b[0] == total
    # What one process did not compute itself, the other did (or it was stored first).
    assert a[1] + a[2] + a[3] == b[1] + b[2] + b[3] == total
    assert a[2] + b[2] == total


def test_two_runs_on_an_existing_store_compute_only_the_missing_cells(instance_files, tmp_path):
    store, log = tmp_path / "r.sqlite", tmp_path / "runs.log"
    first = cli(*_args(instance_files, store, seeds=("0",)), env={"BENCH_TEST_LOG": str(log)})
    assert first.returncode == 0, first.stderr
    procs = [_start(_args(instance_files, store), log) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err for _, err in outs]
    total = len(instance_files) * len(SEEDS)
    runs = _check_once(store, log, total)
    assert len(runs) == total and set(runs.values()) == {1}
    a, b = (_counts(out) for out, _ in outs)
    # Seed 0 was there before both; a run that starts late (a loaded machine) may also
    # find cells the other already finished, so "already stored" is at least that.
    assert a[1] >= len(instance_files) and b[1] >= len(instance_files)
    assert a[2] + b[2] == total - len(instance_files)


def test_a_killed_run_loses_no_cell_the_other_takes_them_over(instance_files, tmp_path):
    store, log = tmp_path / "r.sqlite", tmp_path / "runs.log"
    victim = _start(_args(instance_files, store, jobs="2"), log)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if store.exists() and log.exists() and len(log.read_text().splitlines()) >= 3:
            break
        time.sleep(0.05)
    survivor = _start(_args(instance_files, store), log)
    time.sleep(0.5)
    os.killpg(victim.pid, signal.SIGKILL)  # the run and its running cells
    victim.communicate()
    total = len(instance_files) * len(SEEDS)
    out, err = survivor.communicate(timeout=120)
    assert survivor.returncode == 0, err
    runs = _check_once(store, log, total)
    assert len(runs) == total  # every cell computed, those the dead run held included
    rows, _ = _stored(store)
    mine = re.search(r"run (\S+):", out).group(1)
    by_victim = sum(run != mine for _, run in rows)
    assert by_victim < total, "the kill should land part-way through"
    assert _counts(out)[2] == total - by_victim  # the survivor did all the rest
