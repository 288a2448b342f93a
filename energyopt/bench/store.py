"""The results store: one SQLite file, one committed row per finished cell.

Each finished cell is written in its own transaction the moment it arrives, so a
run killed at any point loses at most the cells still running, and a restarted run
skips every cell already in the store (its key is the primary key, so a cell can
never appear twice). SQLite's journal makes each commit atomic even under SIGKILL.

Tables
------
``meta``      store format (``format = energyopt-results``, ``version``).
``runs``      one row per ``bench`` invocation: id, start time, command line, executor.
``instances`` every instance solved, as JSON (so the store is self-contained).
``cells``     one row per cell: key, instance, method, seed, time limit, options,
              outcome, termination, status, objective, bound, gap, runtimes and
              the method's full ``Result.to_dict()`` as JSON, and the code that computed
              it (:func:`energyopt.bench.provenance.code_version`).
``claims``    cells being computed right now: key, the run computing it, that run's host
              and process id, and its last heartbeat (see :mod:`energyopt.bench.claims`).
              Two ``bench`` processes on one store claim cells before running them, so
              they share the work; a claim whose owner died is taken over.
"""

from __future__ import annotations

import datetime as _dt
import json
import socket
import sqlite3
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import energyopt
from energyopt.bench import provenance
from energyopt.bench.cells import CellRecord
from energyopt.bench.claims import Owner
from energyopt.bench.claims import now as claims_now
from energyopt.core.gap import gap
from energyopt.core.paths import output_file

STORE_FORMAT = "energyopt-results"
STORE_VERSION = 1
#: SQLite ``application_id`` of a results store ("EOPT"), to tell it from other databases.
APPLICATION_ID = 0x454F5054

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, started_at TEXT NOT NULL, argv TEXT NOT NULL,
    executor TEXT NOT NULL, jobs INTEGER NOT NULL, host TEXT NOT NULL,
    energyopt_version TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS instances (
    instance_id TEXT PRIMARY KEY, family TEXT NOT NULL, name TEXT NOT NULL,
    instance_json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS cells (
    cell_key TEXT PRIMARY KEY,
    family TEXT NOT NULL, suite TEXT NOT NULL, origin TEXT NOT NULL,
    instance_id TEXT NOT NULL, instance_name TEXT NOT NULL,
    method TEXT NOT NULL, seed INTEGER, time_limit_s REAL, options_json TEXT NOT NULL,
    outcome TEXT NOT NULL, termination TEXT NOT NULL, status TEXT NOT NULL,
    objective REAL, bound REAL, gap REAL, runtime_s REAL, wall_s REAL NOT NULL,
    solver TEXT NOT NULL, solver_version TEXT NOT NULL, message TEXT NOT NULL,
    result_json TEXT, run_id TEXT NOT NULL, finished_at TEXT NOT NULL,
    code_version TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS cells_by_instance ON cells (family, instance_id, method);
"""

#: Added without a version change: a store written before it has no code version per
#: cell (its cells read as "unrecorded", which is never the running code's).
_CODE_VERSION_COLUMN = "ALTER TABLE cells ADD COLUMN code_version TEXT NOT NULL DEFAULT ''"

#: Added without a version change: a store written before it simply has no claims yet.
_CLAIMS_SCHEMA = """
CREATE TABLE IF NOT EXISTS claims (
    cell_key TEXT PRIMARY KEY, run_id TEXT NOT NULL, host TEXT NOT NULL,
    pid INTEGER NOT NULL, heartbeat REAL NOT NULL
);
"""

#: Columns that describe what was computed, independent of when, where and how fast:
#: two stores of the same cells must agree on these (see :meth:`ResultsStore.contents`).
CONTENT_COLUMNS = (
    "cell_key",
    "family",
    "suite",
    "instance_id",
    "method",
    "seed",
    "time_limit_s",
    "options_json",
    "outcome",
    "termination",
    "status",
    "objective",
    "bound",
    "gap",
    "solver",
    "solver_version",
)


class StoreError(ValueError):
    """The file is not a results store (corrupt, foreign, or of another version)."""


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")


class ResultsStore:
    """A results store on disk.

    Parameters
    ----------
    path
        SQLite file.
    create
        Create the file when it does not exist (``bench``); otherwise a missing
        file is a :class:`FileNotFoundError` (``report``).
    read_only
        Open without writing anything (``report``): works in a read-only directory.
    """

    def __init__(self, path: str | Path, *, create: bool = False, read_only: bool = False) -> None:
        self.path = Path(path)
        if not self.path.exists() and not create:
            raise FileNotFoundError(f"{self.path}: no such results store")
        if self.path.is_dir():
            raise StoreError(f"{self.path}: is a directory, not a results store")
        if self.path.exists() and not self.path.is_file():  # a FIFO would block SQLite
            raise StoreError(f"{self.path}: not a regular file, so not a results store")
        if create:  # one clear error for a path under a file or an unwritable folder
            output_file(self.path, "results store")
        try:
            self._db = self._connect(read_only and not create)
            self._open(create, read_only)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: not an energyopt results store ({exc})") from None

    def _connect(self, read_only: bool) -> sqlite3.Connection:
        """Open read-write, or read-only for readers (``report``), so a report works on a store
        in a read-only directory (WAL needs its ``-shm`` file: without one, the file is read
        as immutable, which is safe because nobody can create that file there either)."""
        if not read_only:
            return sqlite3.connect(self.path, timeout=30, isolation_level=None)
        uri = self.path.resolve().as_uri()
        try:
            db = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=30, isolation_level=None)
            db.execute("PRAGMA schema_version").fetchone()
            return db
        except sqlite3.OperationalError:
            return sqlite3.connect(f"{uri}?immutable=1", uri=True, isolation_level=None)

    def _open(self, create: bool, read_only: bool = False) -> None:
        if create and not read_only and self._is_empty():
            self._create()
        self._check()
        if not read_only:
            # NORMAL sync in WAL mode keeps every commit atomic and durable against a killed
            # process, without an fsync per cell (only a power cut may lose the last ones).
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA synchronous = NORMAL")
            if not self._db.execute(
                "SELECT 1 FROM sqlite_master WHERE type='table' AND name='claims'"
            ).fetchone():
                with self._transaction() as db:
                    db.execute(_CLAIMS_SCHEMA)
            if not self._has_code_versions():
                with self._transaction() as db:
                    db.execute(_CODE_VERSION_COLUMN)

    def _has_code_versions(self) -> bool:
        return any(r[1] == "code_version" for r in self._db.execute("PRAGMA table_info(cells)"))

    def _is_empty(self) -> bool:
        db = self._db
        app_id = db.execute("PRAGMA application_id").fetchone()[0]
        return app_id == 0 and not db.execute("SELECT name FROM sqlite_master").fetchone()

    def _create(self) -> None:
        """The schema, in one transaction that re-checks emptiness: a second process
        creating the same new store waits, then finds the first one's complete store."""
        self._db.execute("PRAGMA journal_mode = WAL")
        with self._transaction() as db:
            if not self._is_empty():
                return
            db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    db.execute(statement)
            db.executemany(
                "INSERT INTO meta VALUES (?, ?)",
                [("format", STORE_FORMAT), ("version", str(STORE_VERSION))],
            )

    def _check(self) -> None:
        db = self._db
        if self._is_empty():
            raise StoreError(f"{self.path}: not an energyopt results store (empty database)")
        app_id = db.execute("PRAGMA application_id").fetchone()[0]
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if app_id != APPLICATION_ID or "meta" not in tables:
            raise StoreError(
                f"{self.path}: not an energyopt results store (an SQLite database of another kind)"
            )
        meta = dict(db.execute("SELECT key, value FROM meta"))
        if meta.get("format") != STORE_FORMAT or meta.get("version") != str(STORE_VERSION):
            raise StoreError(
                f"{self.path}: results store format {meta.get('format')!r} version "
                f"{meta.get('version')!r}; this energyopt reads version {STORE_VERSION}"
            )
        missing = {"runs", "instances", "cells"} - tables
        if missing:
            raise StoreError(f"{self.path}: damaged results store (missing {sorted(missing)})")

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> ResultsStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing ------------------------------------------------------------------
    def start_run(self, argv: Iterable[str], executor: str, jobs: int) -> str:
        """Record a new run and return its id (UTC start time plus a random suffix)."""
        started = _now()
        stamp = started.replace("-", "").replace(":", "").replace("+0000", "")[:15]
        run_id = f"{stamp}Z-{uuid.uuid4().hex[:6]}"
        with self._transaction() as db:
            db.execute(
                "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    started,
                    json.dumps(list(argv)),
                    executor,
                    int(jobs),
                    socket.gethostname(),
                    energyopt.__version__,
                ),
            )
        return run_id

    def add_instances(self, instances: Iterable[tuple[str, str, str, str]]) -> None:
        """Store ``(instance_id, family, name, json)`` rows not stored yet."""
        with self._transaction() as db:
            db.executemany("INSERT OR IGNORE INTO instances VALUES (?, ?, ?, ?)", instances)

    def add_cell(
        self,
        spec: dict[str, Any],
        record: CellRecord,
        run_id: str,
        *,
        claimed: bool = False,
        code_version: str | None = None,
    ) -> bool:
        """Commit one finished cell (``spec`` from :meth:`Cell.to_spec`, ``record`` from
        :func:`energyopt.bench.cellclient.run_cell`); ``True`` when it was stored.

        ``code_version`` (default: the running code's,
        :func:`energyopt.bench.provenance.code_version`) is recorded with the cell.

        Without ``claimed``, the row replaces any earlier one (a failed cell being retried).
        With ``claimed``, the run ``run_id`` claimed the cell (:meth:`claim_cells`): its
        claim is released in the same transaction, and the row is written only while the
        claim is still its own, or, if another run took the claim over, only if the cell
        is still missing (the first result stored wins, none is overwritten).
        """
        version = code_version if code_version is not None else provenance.code_version()
        row = (*_cell_row(spec, record, run_id), version)
        insert = f"INTO cells VALUES ({', '.join('?' * len(row))})"
        with self._transaction() as db:
            if not claimed:
                db.execute(f"INSERT OR REPLACE {insert}", row)
                return True
            holder = db.execute(
                "SELECT run_id FROM claims WHERE cell_key = ?", (spec["key"],)
            ).fetchone()
            if holder is not None and holder[0] == run_id:
                db.execute("DELETE FROM claims WHERE cell_key = ?", (spec["key"],))
                db.execute(f"INSERT OR REPLACE {insert}", row)
                return True
            return db.execute(f"INSERT OR IGNORE {insert}", row).rowcount == 1

    # -- claims ------------------------------------------------------------------
    def claim_cells(
        self, expected: dict[str, str | None], owner: Owner, want: int
    ) -> tuple[list[str], list[str], int]:
        """Claim up to ``want`` cells for ``owner``, in the order of ``expected``.

        ``expected`` maps each cell key still to do to the run id of its stored row when
        the run was planned (``None``: not stored). A cell whose row changed since then
        was done by another run. Returns ``(claimed, done_elsewhere, busy)``: the keys
        claimed now, the keys done by another run, and how many are being computed by
        another live run.
        """
        claimed: list[str] = []
        gone: list[str] = []
        busy = 0
        t = claims_now()
        with self._transaction() as db:
            for key, before in expected.items():
                if len(claimed) >= want:
                    break
                row = db.execute("SELECT run_id FROM cells WHERE cell_key = ?", (key,)).fetchone()
                if (row and row[0]) != before:
                    gone.append(key)
                    continue
                held = db.execute(
                    "SELECT run_id, host, pid, heartbeat FROM claims WHERE cell_key = ?", (key,)
                ).fetchone()
                if held is not None and owner.holds(*held, now=t):
                    busy += 1
                    continue
                db.execute(
                    "INSERT OR REPLACE INTO claims VALUES (?, ?, ?, ?, ?)",
                    (key, owner.run_id, owner.host, owner.pid, t),
                )
                claimed.append(key)
        return claimed, gone, busy

    def heartbeat(self, run_id: str) -> None:
        """Tell other runs that ``run_id`` is alive and still computing its claimed cells."""
        with self._transaction() as db:
            db.execute("UPDATE claims SET heartbeat = ? WHERE run_id = ?", (claims_now(), run_id))

    def release_claims(self, run_id: str) -> None:
        """Give back the cells ``run_id`` claimed but did not finish (it is stopping)."""
        with self._transaction() as db:
            db.execute("DELETE FROM claims WHERE run_id = ?", (run_id,))

    def stored_runs(self) -> dict[str, tuple[str, bool]]:
        """Cell key -> (run id that stored it, whether it failed), for every stored cell."""
        cur = self._db.execute(
            "SELECT cell_key, run_id, outcome != 'finished' OR termination = 'error' FROM cells"
        )
        return {key: (run, bool(failed)) for key, run, failed in cur}

    def code_versions(self) -> dict[str, str]:
        """Cell key -> the code version that computed it (``""``: not recorded)."""
        if not self._has_code_versions():  # an older store opened read-only
            return {key: "" for (key,) in self._db.execute("SELECT cell_key FROM cells")}
        return dict(self._db.execute("SELECT cell_key, code_version FROM cells"))

    def _transaction(self) -> _Transaction:
        return _Transaction(self._db)

    # -- reading ------------------------------------------------------------------
    def rows(self, columns: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """Cells as dictionaries, ordered by key."""
        cols = ", ".join(columns) if columns else "*"
        cur = self._db.execute(f"SELECT {cols} FROM cells ORDER BY cell_key")
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r)) for r in cur]

    def contents(self) -> list[tuple[Any, ...]]:
        """What was computed (:data:`CONTENT_COLUMNS`), without timings, run ids or dates."""
        cur = self._db.execute(f"SELECT {', '.join(CONTENT_COLUMNS)} FROM cells ORDER BY cell_key")
        return [tuple(r) for r in cur]

    def runs(self) -> list[dict[str, Any]]:
        cur = self._db.execute("SELECT * FROM runs ORDER BY started_at")
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r)) for r in cur]

    def instance_json(self, instance_id: str) -> str | None:
        row = self._db.execute(
            "SELECT instance_json FROM instances WHERE instance_id = ?", (instance_id,)
        ).fetchone()
        return None if row is None else row[0]

    def instance_sources(self) -> dict[str, list[str]]:
        """Family -> the distinct ``source`` fields of its stored instances (where from,
        and whether simulated), as text."""
        out: dict[str, set[str]] = {}
        for family, text in self._db.execute("SELECT family, instance_json FROM instances"):
            try:
                source = json.loads(text).get("source", "")
            except (json.JSONDecodeError, AttributeError):
                source = ""
            if not isinstance(source, str):
                source = json.dumps(source, sort_keys=True)
            out.setdefault(family, set()).add(source or "(no source recorded)")
        return {f: sorted(v) for f, v in out.items()}

    def iter_results(self) -> Iterator[dict[str, Any]]:
        """The full ``Result.to_dict()`` of every finished cell, with its ``cell_key``."""
        for key, text in self._db.execute(
            "SELECT cell_key, result_json FROM cells "
            "WHERE result_json IS NOT NULL ORDER BY cell_key"
        ):
            yield {"cell_key": key, **json.loads(text)}

    def __len__(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM cells").fetchone()[0]


def _termination_of(outcome: str) -> str:
    return {"killed": "time_limit", "crashed": "error", "error": "error"}.get(outcome, "unknown")


class _Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT``: one atomic write."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> sqlite3.Connection:
        self.db.execute("BEGIN IMMEDIATE")
        return self.db

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self.db.execute("COMMIT" if exc_type is None else "ROLLBACK")


def _cell_row(spec: dict[str, Any], record: CellRecord, run_id: str) -> tuple[Any, ...]:
    """The ``cells`` row of a finished cell (without its code version)."""
    res = record.result or {}
    objective, bound = res.get("objective"), res.get("bound")
    row = (
        spec["key"],
        spec["family"],
        spec["suite"],
        spec["origin"],
        spec["instance_id"],
        spec["instance_name"],
        spec["method"],
        spec["seed"],
        spec["time_limit_s"],
        json.dumps(spec["options"], sort_keys=True, separators=(",", ":")),
        record.outcome,
        res.get("termination", _termination_of(record.outcome)),
        res.get("status", "none"),
        objective,
        bound,
        gap(objective, bound),
        res.get("runtime_s"),
        record.wall_s,
        res.get("solver", ""),
        res.get("solver_version", ""),
        record.message or res.get("message", ""),
        json.dumps(res) if res else None,
        run_id,
        _now(),
    )
    return row
