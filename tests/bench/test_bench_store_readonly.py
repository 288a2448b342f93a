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
