"""SIGKILL a bench run part-way, restart it: nothing recomputed, lost or duplicated."""

from __future__ import annotations

import collections
import os
import signal
import sqlite3
import subprocess
import sys
import time

from benchutil import HERE, PLUGIN, ROOT


def _finished(store):
    if not store.exists():
        return {}
    try:
        db = sqlite3.connect(store, timeout=5)
        rows = db.execute("SELECT cell_key, finished_at, run_id, objective FROM cells").fetchall()
        db.close()
    except sqlite3.OperationalError:  # created but tables not there yet
        return {}
    return {r[0]: r[1:] for r in rows}


def test_sigkill_then_restart(instance_files, tmp_path):
    store = tmp_path / "r.sqlite"
    log = tmp_path / "executions.log"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), str(ROOT), env.get("PYTHONPATH", "")])
    env["BENCH_TEST_LOG"] = str(log)
    args = [
        sys.executable, "-m", "energyopt.cli", "bench", *map(str, instance_files),
        "-m", "test-sleep", "--seeds", "0", "1",
        "-o", "sleep_s=0.6", "--time-limit", "30", "--jobs", "2",
        "--plugin", PLUGIN, "--store", str(store), "--no-progress",
    ]  # fmt: skip
    total = len(instance_files) * 2
    # Own process group, so that the kill takes the running cells' processes too.
    proc = subprocess.Popen(args, env=env, cwd=ROOT, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    deadline = time.monotonic() + 60
    while len(_finished(store)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = _finished(store)
    assert 2 <= len(before) < total, "the kill should land part-way through"

    rerun = subprocess.run(args, env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert rerun.returncode == 0, rerun.stderr
    assert f"{len(before)} already in the store, {total - len(before)} run now" in rerun.stdout
    after = _finished(store)
    assert len(after) == total  # none lost
    assert all(objective is not None for _, _, objective in after.values())
    db = sqlite3.connect(store)
    assert db.execute("SELECT COUNT(*), COUNT(DISTINCT cell_key) FROM cells").fetchone() == (
        total,
        total,
    )  # none duplicated
    db.close()
    for key, row in before.items():
        assert after[key] == row  # the stored row is untouched
    # Executions per cell: a cell finished before the kill ran exactly once.
    runs = collections.Counter(log.read_text().splitlines())
    for key in before:
        _, iid, _, seed = key.split("/")[:4]
        assert runs[f"test-sleep {iid} {seed.removeprefix('seed=')}"] == 1
    assert sum(runs.values()) >= total
