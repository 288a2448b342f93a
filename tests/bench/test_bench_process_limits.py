"""Each cell in its own process: overruns are killed, crashes and bugs are recorded.

These run ``energyopt bench`` in a subprocess with the test plugin
(``bench_plugin_methods``), which must never be imported into the pytest process.
"""

from __future__ import annotations

import sqlite3

from benchutil import PLUGIN, cli


def _rows(store):
    db = sqlite3.connect(store)
    db.row_factory = sqlite3.Row
    rows = {r["method"]: dict(r) for r in db.execute("SELECT * FROM cells")}
    db.close()
    return rows


def test_overrun_killed_crash_and_mismatch_recorded(instance_files, tmp_path):
    store = tmp_path / "r.sqlite"
    run = cli(
        "bench",
        str(instance_files[0]),
        "-m", "test-hang", "-m", "test-crash", "-m", "test-mismatch", "-m", "bruteforce",
        "--time-limit", "0.5", "--grace", "1", "--jobs", "2",
        "--plugin", PLUGIN, "--store", str(store), "--no-progress",
        timeout=60,
    )  # fmt: skip
    # Issue 16: bench names the cells it lost and exits non-zero for them.
    assert run.returncode == 1, run.stderr
    # Each lost cell is counted once: the hang as killed, the crash and the mismatch as failed.
    assert "4 run now (2 failed, 1 killed" in run.stdout
    assert run.stdout.count("  lost: ") == 3 and "test-hang seed=0: killed" in run.stdout
    assert "bruteforce" not in run.stdout.split("lost:", 1)[1]
    rows = _rows(store)
    hang = rows["test-hang"]
    assert hang["outcome"] == "killed"
    assert hang["termination"] == "time_limit" and hang["status"] == "none"
    assert 1.5 <= hang["wall_s"] < 30  # killed at time limit + grace, not after an hour
    assert rows["test-crash"]["outcome"] == "crashed"
    assert "exit status 3" in rows["test-crash"]["message"]
    assert rows["test-mismatch"]["outcome"] == "error"
    assert rows["test-mismatch"]["message"].startswith("EvaluationMismatchError")
    assert rows["bruteforce"]["outcome"] == "finished"

    # A restart retries failed cells only when asked to (--retry-failed).
    retry = cli(
        "bench", str(instance_files[0]),
        "-m", "test-crash", "-m", "bruteforce", "--retry-failed",
        "--time-limit", "0.5", "--plugin", PLUGIN, "--store", str(store), "--no-progress",
        timeout=60,
    )  # fmt: skip
    # bruteforce: finished, skipped; test-crash: retried (and crashes again).
    assert "1 already in the store, 1 run now (1 failed" in retry.stdout, retry.stderr
    assert len(_rows(store)) == 4


def _alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie awaiting its reaper counts as dead)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_time_limit_kill_takes_the_cells_children(instance_files, tmp_path):
    """Issue 13: a kill reaches the whole process group, not only the cell's process."""
    import time

    pid_file = tmp_path / "child.pid"
    store = tmp_path / "r.sqlite"
    run = cli(
        "bench", str(instance_files[0]), "-m", "test-hang-child",
        "--time-limit", "0.3", "--grace", "0.2", "--allow-failures",
        "--plugin", PLUGIN, "--store", str(store), "--no-progress",
        env={"BENCH_TEST_CHILD_PID": str(pid_file)}, timeout=60,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert _rows(store)["test-hang-child"]["outcome"] == "killed"
    child = int(pid_file.read_text())
    for _ in range(50):  # the kernel delivers SIGKILL promptly; allow a reaper a moment
        if not _alive(child):
            break
        time.sleep(0.1)
    assert not _alive(child), f"child {child} of a killed cell still runs"
