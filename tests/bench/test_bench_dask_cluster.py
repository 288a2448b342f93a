"""``energyopt bench`` on a real Dask cluster: Dask's own scheduler and worker processes.

A scheduler and two ``dask worker`` processes (each with its nanny) on localhost. A first
client is SIGKILLed part-way; a second client on the same store resumes, and one of the
two workers is SIGKILLed (with its nanny, for good) while that client runs. The store must
then hold exactly what a local run stores: the same cells with the same values, each once;
the cells stored before the kills were not computed again, and the dead worker's cells
were run on the other one.
"""

from __future__ import annotations

import collections
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from benchutil import HERE, PLUGIN, ROOT, cli

from energyopt.bench.store import ResultsStore

pytest.importorskip("distributed")

SEEDS = ("0", "1", "2", "3")


def _env(log):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), str(ROOT), env.get("PYTHONPATH", "")])
    env["BENCH_TEST_LOG"] = str(log)
    return env


def _spawn(args, env, tmp_path, name):
    out = open(tmp_path / f"{name}.log", "w")
    return subprocess.Popen(
        args, env=env, cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
    )


def _scheduler_address(sched_file, tries: int = 600) -> str | None:
    """The address in the scheduler's file once it is written whole (None after ``tries``
    looks, 0.1 s apart: at least a minute).

    The scheduler creates the file before it writes it: a file that exists can still
    be empty or hold half a document (an empty file failed this fixture once).
    """
    for _ in range(tries):
        try:
            return json.loads(sched_file.read_text())["address"]
        except (FileNotFoundError, json.JSONDecodeError, KeyError):
            time.sleep(0.1)
    return None


@pytest.fixture
def cluster(tmp_path):
    """(scheduler address, [worker processes], execution log) of a fresh localhost cluster."""
    log = tmp_path / "executions.log"
    env = _env(log)
    sched_file = tmp_path / "scheduler.json"
    dask = [sys.executable, "-m", "dask"]
    procs = [
        _spawn([*dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                "--scheduler-file", str(sched_file)], env, tmp_path, "scheduler")
    ]  # fmt: skip
    # The processes stop whatever fails, the set-up included: a failed set-up once
    # left its scheduler running.
    try:
        address = _scheduler_address(sched_file)
        assert address, (tmp_path / "scheduler.log").read_text()
        workers = [
            _spawn([*dask, "worker", address, "--nthreads", "1", "--no-dashboard",
                    "--host", "127.0.0.1", "--name", f"w{i}"], env, tmp_path, f"worker{i}")
            for i in range(2)
        ]  # fmt: skip
        procs += workers
        yield address, workers, log
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


def _bench_args(files, store, *extra):
    return [
        "bench", *map(str, files), "-m", "test-sleep", "--seeds", *SEEDS,
        "-o", "sleep_s=0.4", "--time-limit", "30", "--plugin", PLUGIN,
        "--store", str(store), "--no-progress", *extra,
    ]  # fmt: skip


def _stored(store):
    if not store.exists():
        return set()
    try:
        db = sqlite3.connect(store, timeout=30)
        keys = {r[0] for r in db.execute("SELECT cell_key FROM cells")}
        db.close()
    except sqlite3.OperationalError:  # created but tables not there yet
        return set()
    return keys


def _wait_for(store, count, proc, timeout=90):
    deadline = time.monotonic() + timeout
    while len(_stored(store)) < count and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    return _stored(store)


def _executions(log, keys):
    """How many times each stored cell was computed (the plugin logs every call)."""
    runs = collections.Counter(log.read_text().splitlines())
    out = {}
    for key in keys:
        _, iid, _, seed = key.split("/")[:4]
        out[key] = runs[f"test-sleep {iid} {seed.removeprefix('seed=')}"]
    return out


def test_cluster_run_survives_client_and_worker_kills(cluster, instance_files, tmp_path):
    address, workers, log = cluster
    store = tmp_path / "dask.sqlite"
    total = len(instance_files) * len(SEEDS)
    dask = ("--executor", "dask", "--scheduler", address)
    client_cmd = [sys.executable, "-m", "energyopt.cli", *_bench_args(instance_files, store, *dask)]
    env = _env(log)

    first = _spawn(client_cmd, env, tmp_path, "client1")
    _wait_for(store, 2, first)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    before_client_kill = _stored(store)
    assert 2 <= len(before_client_kill) < total, (tmp_path / "client1.log").read_text()

    second = _spawn(client_cmd, env, tmp_path, "client2")
    before_worker_kill = _wait_for(store, len(before_client_kill) + 2, second)
    assert len(before_worker_kill) < total, "the worker kill should land part-way through"
    os.killpg(workers[0].pid, signal.SIGKILL)  # the nanny and its worker: gone for good
    workers[0].wait()
    assert second.wait(120) == 0, (tmp_path / "client2.log").read_text()
    summary = (tmp_path / "client2.log").read_text()
    assert f"{total} cells, {len(before_client_kill)} already in the store" in summary  # resumed
    # A cell stored before a kill was not computed again. (A cell still running when its
    # client died may run twice: the dead client's task finishes on its worker unheard.)
    done = _executions(log, before_client_kill)
    assert all(n == 1 for n in done.values()), done
    assert all(n >= 1 for n in _executions(log, _stored(store)).values())

    local = tmp_path / "local.sqlite"
    ref = cli(*_bench_args(instance_files, local, "--jobs", "2"))
    assert ref.returncode == 0, ref.stderr
    with ResultsStore(store) as d, ResultsStore(local) as ref_db:
        assert d.contents() == ref_db.contents()  # same cells, same values
        assert len(d) == total
    db = sqlite3.connect(store)
    assert db.execute("SELECT COUNT(DISTINCT cell_key) FROM cells").fetchone()[0] == total
    assert db.execute("SELECT COUNT(*) FROM claims").fetchone()[0] == 0
    db.close()

    # On the surviving worker: a hung cell is killed at its limit, a crashing one recorded,
    # and the worker goes on (the finished cell after them is stored).
    faults = tmp_path / "faults.sqlite"
    run = cli(
        "bench", str(instance_files[0]), "-m", "test-hang", "-m", "test-crash", "-m",
        "bruteforce", "--time-limit", "0.5", "--grace", "1", "--plugin", PLUGIN,
        "--store", str(faults), "--no-progress", "--allow-failures", *dask, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    with ResultsStore(faults) as db:
        rows = {r["method"]: r for r in db.rows()}
    assert rows["test-hang"]["outcome"] == "killed"
    assert 1.5 <= rows["test-hang"]["wall_s"] < 30
    assert rows["test-crash"]["outcome"] == "crashed"
    assert "exit status 3" in rows["test-crash"]["message"]
    assert rows["bruteforce"]["outcome"] == "finished"
