"""The claim rules of a shared store, one by one (energyopt/bench/claims.py).

The concurrent processes themselves are tested in test_bench_concurrent.py; here each rule
is pinned with hand-written claim rows: who holds a cell, when a claim may be taken over,
and which result a cell keeps when two runs finish it.
"""

from __future__ import annotations

import os
import subprocess
import sys

from benchutil import fake_record

from energyopt.bench.claims import STALE_AFTER_S, Owner, now, process_alive
from energyopt.bench.runner import plan_cells
from energyopt.bench.store import ResultsStore


def _cells(instance_files):
    return plan_cells(files=instance_files[:2], methods=["bruteforce"], time_limit_s=5)


def _claim_as(db, key, run_id, host, pid, heartbeat):
    with db._transaction() as tx:
        tx.execute("INSERT INTO claims VALUES (?, ?, ?, ?, ?)", (key, run_id, host, pid, heartbeat))


def _dead_pid():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_live_claim_is_respected_a_dead_or_stale_one_taken_over(instance_files, tmp_path):
    a, b = _cells(instance_files)
    me = Owner("me")
    cases = [
        # (host, pid, heartbeat age in s, held by another live run?)
        ("elsewhere", 1, 0.0, True),  # another host, fresh heartbeat
        ("elsewhere", 1, STALE_AFTER_S + 1, False),  # another host, heartbeat too old
        (me.host, os.getppid(), 0.0, True),  # this host, a live process
        (me.host, _dead_pid(), 0.0, False),  # this host, the process is gone
        (me.host, os.getpid(), 0.0, False),  # this very process, an earlier run
    ]
    for host, pid, age, held in cases:
        with ResultsStore(tmp_path / f"{host}-{pid}-{age}.sqlite", create=True) as db:
            _claim_as(db, a.key, "other", host, pid, now() - age)
            claimed, gone, busy = db.claim_cells({a.key: None, b.key: None}, me, want=2)
            assert (claimed, gone, busy) == (([b.key], [], 1) if held else ([a.key, b.key], [], 0))


def test_claims_skip_stored_cells_and_respect_want(instance_files, tmp_path):
    a, b = _cells(instance_files)
    with ResultsStore(tmp_path / "r.sqlite", create=True) as db:
        db.add_cell(a.to_spec(), fake_record(a, 1.0, None), "earlier")
        # a was stored by run 'earlier' since we planned it as missing: done elsewhere.
        assert db.claim_cells({a.key: None, b.key: None}, Owner("me"), want=1) == (
            [b.key],
            [a.key],
            0,
        )
        # A failed row seen at planning (same run id) may be claimed to be retried.
        assert db.claim_cells({a.key: "earlier"}, Owner("me2"), want=5) == ([a.key], [], 0)


def test_only_the_claim_holder_overwrites_the_first_result_stays(instance_files, tmp_path):
    a, _ = _cells(instance_files)
    with ResultsStore(tmp_path / "r.sqlite", create=True) as db:
        db.claim_cells({a.key: None}, Owner("slow"), want=1)
        # 'slow' stalls; 'fast' takes the claim over (as after a stale heartbeat) and stores.
        with db._transaction() as tx:
            tx.execute("UPDATE claims SET run_id = 'fast'")
        assert db.add_cell(a.to_spec(), fake_record(a, 1.0, None), "fast", claimed=True)
        # 'slow' finishes later: its result is not stored over the first one.
        assert not db.add_cell(a.to_spec(), fake_record(a, 2.0, None), "slow", claimed=True)
        (row,) = db.rows(["objective", "run_id"])
        assert row == {"objective": 1.0, "run_id": "fast"}
        assert db._db.execute("SELECT COUNT(*) FROM claims").fetchone()[0] == 0


def test_process_alive():
    assert process_alive(os.getpid())
    assert not process_alive(_dead_pid())
