"""Issue 13: readers (``report``) open a results store read-only."""

from __future__ import annotations

import sqlite3

import pytest

from energyopt.bench.store import ResultsStore


def test_reader_opens_store_read_only(tmp_path):
    path = tmp_path / "r.sqlite"
    ResultsStore(path, create=True).close()
    with ResultsStore(path, read_only=True) as store:
        assert store._db.execute("SELECT count(*) FROM cells").fetchone() == (0,)
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            store._db.execute("DELETE FROM meta")
    with ResultsStore(path, read_only=True) as store:  # and nothing was changed
        assert dict(store._db.execute("SELECT key, value FROM meta"))["format"]


def test_page_level_corruption_names_the_file(tmp_path):
    """Issue 13: a corrupt page surfaces long after the open; the error still names the file."""
    from benchutil import cli

    path = tmp_path / "r.sqlite"
    with ResultsStore(path, create=True) as store:
        store.add_instances([(f"i{k}", "pipeline", f"n{k}", "x" * 3000) for k in range(20)])
        store._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(path.read_bytes())
    data[4096 * 3 : 4096 * 4] = b"\xff" * 4096  # a page in the middle, not the header
    path.write_bytes(bytes(data))
    run = cli("report", str(path), "--out", str(tmp_path / "out"), timeout=60)
    assert run.returncode == 2
    assert "Traceback" not in run.stderr
    assert run.stderr.strip().splitlines() == [
        f"energyopt report: error: {path}: database disk image is malformed"
    ], run.stderr
