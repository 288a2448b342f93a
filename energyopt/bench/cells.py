"""One benchmark cell, (instance, method, seed), and the separate process that solves it.

Every cell runs in a process of its own, so that a solver that ignores its time
limit, leaks memory or crashes the interpreter takes only its own cell with it.
Processes are forked from a *cell server* (:mod:`energyopt.bench.cellserver`), one per
``bench`` process or Dask worker, that has imported the package and the families once,
so a cell costs milliseconds, not the second of imports a fresh interpreter needs
(``ENERGYOPT_BENCH_SUBPROCESS=1`` runs each cell in a fresh interpreter,
``python -m energyopt.bench.worker``, instead). Once the cell's process has loaded its
instance, the caller waits ``time_limit_s + grace_s`` seconds of wall-clock time (model
building included), then kills the process group and records the cell as ``killed``.

The same :func:`run_cell` runs under both executors (local threads or Dask workers):
it takes and returns plain dictionaries, so that a Dask worker on another machine
needs nothing but this package.
"""

from __future__ import annotations

import dataclasses
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import energyopt

#: Outcomes of a cell. Only ``finished`` cells carry the method's own Result.
FINISHED, KILLED, CRASHED, ERROR = "finished", "killed", "crashed", "error"
OUTCOMES = (FINISHED, KILLED, CRASHED, ERROR)

#: Seconds a cell may run past its time limit before it is killed (counted from the
#: moment the worker process has started and read its instance): room for solvers
#: that check their clock coarsely and for writing the result.
DEFAULT_GRACE_S = 5.0
#: Seconds a worker process may take to start (imports) before it is killed.
STARTUP_TIMEOUT_S = 120.0

_STDERR_TAIL = 2000


@dataclasses.dataclass(frozen=True)
class Cell:
    """What to solve: an instance (as JSON text), a method, a seed, a time limit.

    Attributes
    ----------
    family, instance_id, instance_name
        From the instance.
    instance_json
        The instance itself, so that a worker needs no access to the files.
    suite
        Suite name (``smoke``, ``paper``) or ``"file"`` for instances given as files.
    origin
        Where the instance came from (a family's ``suite('smoke')[3]`` or a path).
    method, seed, time_limit_s, options
        Arguments of :func:`energyopt.solve`.
    plugins
        Modules the worker imports before solving (to register extra methods).
    grace_s
        Wall-clock seconds allowed past ``time_limit_s`` before the process is killed.
    """

    family: str
    instance_id: str
    instance_name: str
    instance_json: str
    suite: str
    origin: str
    method: str
    seed: int | None
    time_limit_s: float | None
    options: tuple[tuple[str, Any], ...] = ()
    plugins: tuple[str, ...] = ()
    grace_s: float = DEFAULT_GRACE_S

    @property
    def options_json(self) -> str:
        return json.dumps(dict(self.options), sort_keys=True, separators=(",", ":"))

    @property
    def key(self) -> str:
        """Identity of the cell in the store: same key, same computation."""
        return (
            f"{self.family}/{self.instance_id}/{self.method}/seed={self.seed}"
            f"/time_limit={self.time_limit_s}/options={self.options_json}"
        )

    @property
    def kill_after_s(self) -> float | None:
        return None if self.time_limit_s is None else self.time_limit_s + self.grace_s

    def to_spec(self) -> dict[str, Any]:
        """Plain dictionary sent to the worker process (and through Dask)."""
        spec = dataclasses.asdict(self)
        spec["options"] = dict(self.options)
        spec["plugins"] = list(self.plugins)
        spec["key"] = self.key
        spec["kill_after_s"] = self.kill_after_s
        return spec


def make_cell(
    instance: Any,
    method: str,
    *,
    seed: int | None,
    time_limit_s: float | None,
    suite: str,
    origin: str,
    options: dict[str, Any] | None = None,
    plugins: tuple[str, ...] = (),
    grace_s: float = DEFAULT_GRACE_S,
) -> Cell:
    """A :class:`Cell` for ``instance`` (any family)."""
    return Cell(
        family=instance.family,
        instance_id=instance.instance_id,
        instance_name=str(getattr(instance, "name", "") or ""),
        instance_json=instance.to_json(indent=None),
        suite=suite,
        origin=origin,
        method=method,
        seed=seed,
        time_limit_s=time_limit_s,
        options=tuple(sorted((options or {}).items())),
        plugins=tuple(plugins),
        grace_s=grace_s,
    )


def _package_root() -> str:
    return str(Path(energyopt.__file__).resolve().parents[1])


def run_cell(spec: dict[str, Any], *, mode: str | None = None) -> dict[str, Any]:
    """Solve one cell in a process of its own and return its record (never raises for it).

    ``mode``: ``"fork"`` (forked from this process's warm cell server,
    :mod:`energyopt.bench.cellserver`) or ``"subprocess"`` (a fresh interpreter); by default
    ``fork`` unless ``ENERGYOPT_BENCH_SUBPROCESS=1`` or on Windows (no ``fork``).
    """
    if mode is None:
        fresh = os.environ.get("ENERGYOPT_BENCH_SUBPROCESS") == "1"
        mode = "subprocess" if fresh or sys.platform == "win32" else "fork"
    if mode == "fork":
        from energyopt.bench.cellserver import run_cell_warm

        return run_cell_warm(spec)
    if mode == "subprocess":
        return _run_subprocess(spec)
    raise ValueError(f"mode = {mode!r}: expected 'fork' or 'subprocess'")


def start_cell_server() -> Any:
    """This process's cell server (:class:`energyopt.bench.cellserver.CellServer`), started
    now if it is not running; ``None`` where cells run as fresh interpreters."""
    if os.environ.get("ENERGYOPT_BENCH_SUBPROCESS") != "1" and sys.platform != "win32":
        from energyopt.bench.cellserver import start_server

        return start_server(preloaded_modules())
    return None


def cells_to_json(cells: Iterable[Cell]) -> dict[str, Any]:
    """Cells as JSON-ready data, each distinct instance text once (a suite runs every
    instance with several methods and seeds)."""
    texts: dict[str, int] = {}
    rows = []
    for cell in cells:
        row = dataclasses.asdict(cell)
        row["instance_json"] = texts.setdefault(row["instance_json"], len(texts))
        rows.append(row)
    return {"instances": list(texts), "cells": rows}


def cells_from_json(data: dict[str, Any]) -> list[Cell]:
    """The cells of :func:`cells_to_json` (cells of one instance share its text)."""
    texts = data["instances"]
    return [
        Cell(
            **{
                **row,
                "instance_json": texts[row["instance_json"]],
                "options": tuple((k, v) for k, v in row["options"]),
                "plugins": tuple(row["plugins"]),
            }
        )
        for row in data["cells"]
    ]


def _run_subprocess(spec: dict[str, Any]) -> dict[str, Any]:
    """Solve one cell in a fresh interpreter and return its record.

    The worker says ``ready`` once it has imported the package and read the
    instance; from then on it has ``time_limit_s + grace_s`` seconds of wall-clock
    time (start-up is bounded separately by :data:`STARTUP_TIMEOUT_S`, so that a
    loaded machine does not turn slow imports into killed cells).

    Returns
    -------
    dict
        ``key``, ``outcome`` (one of :data:`OUTCOMES`), ``result`` (``Result.to_dict()``
        for finished cells, else ``None``), ``message``, ``wall_s`` (start-up included).
    """
    env = dict(os.environ)
    # The worker must import this very package, wherever the caller's cwd is.
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (_package_root(), os.getcwd(), env.get("PYTHONPATH", "")) if p
    )
    tick = time.perf_counter()
    with tempfile.TemporaryFile() as err_file:
        # stderr goes to a file: a chatty solver cannot fill a pipe and stall the worker.
        proc = subprocess.Popen(
            [sys.executable, "-m", "energyopt.bench.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err_file,
            env=env,
            # Its own process group: a kill takes the method's children with it.
            start_new_session=True,
        )
        _LIVE.add(proc)
        if _STOP.is_set():
            proc.kill()
        try:
            proc.stdin.write(json.dumps(spec).encode())
            proc.stdin.close()
            out, state = _read(proc.stdout.fileno(), tick + STARTUP_TIMEOUT_S, until=b"\n")
            if state == "timeout":
                return _kill(proc, spec, tick, f"did not start within {STARTUP_TIMEOUT_S:g} s")
            if state == "line":
                kill_after = spec.get("kill_after_s")
                deadline = None if kill_after is None else time.perf_counter() + kill_after
                rest, state = _read(proc.stdout.fileno(), deadline)
                out += rest
                if state == "timeout":
                    return _kill(
                        proc,
                        spec,
                        tick,
                        f"time limit {spec['time_limit_s']} s + grace "
                        f"{spec.get('grace_s', DEFAULT_GRACE_S)} s exceeded",
                    )
            proc.wait()
        except BaseException:
            # Ctrl-C or a cancelled Dask task: take the process group down with us.
            _kill_group(proc.pid)
            proc.kill()
            proc.wait()
            raise
        finally:
            _LIVE.discard(proc)
            proc.stdout.close()
        err_file.seek(0)
        tail = err_file.read().decode(errors="replace").strip()[-_STDERR_TAIL:]
    return _subprocess_record(spec, proc.returncode, out, tail, time.perf_counter() - tick)


def _subprocess_record(
    spec: dict[str, Any], returncode: int, out: bytes, tail: str, wall: float
) -> dict[str, Any]:
    """The record of a cell run in a fresh interpreter, from its exit and its output."""
    if returncode != 0:
        how = f"killed by signal {-returncode}" if returncode < 0 else f"exit status {returncode}"
        last = tail.splitlines()[-1] if tail else "no error output"
        return _record(spec, CRASHED, None, f"worker process {how}: {last}", wall)
    _, _, payload_text = out.partition(b"\n")
    try:
        payload = json.loads(payload_text)
    except json.JSONDecodeError:
        return _record(spec, CRASHED, None, f"worker wrote no result: {tail[-300:]}", wall)
    if "error" in payload:
        return _record(spec, ERROR, None, payload["error"], wall)
    return _record(spec, FINISHED, payload["result"], payload["result"].get("message", ""), wall)


#: Cell processes alive in this process (to stop them on Ctrl-C).
_LIVE: set[Any] = set()
#: Set by :func:`kill_running`: cells still starting are killed as soon as they start.
_STOP = threading.Event()


def allow_cells() -> None:
    """Let cells run again after :func:`kill_running` (a new batch in the same process)."""
    _STOP.clear()


def kill_running() -> None:
    """Kill every cell process started by this process, and any that starts from now on."""
    _STOP.set()
    for proc in list(_LIVE):
        try:
            _kill_group(proc.pid)
            proc.kill()
        except (OSError, ValueError, AttributeError):
            pass


_PRELOAD: list[str] | None = None


def preload_families(families: Iterable[str]) -> None:
    """Have the cell server (when it starts) import only these families' packages.

    By default it imports every family; a batch of one family starts faster this way.
    Cells of other families still run: the server imports their family when the first
    of them arrives.
    """
    from energyopt.core.registry import FAMILY_MODULES

    global _PRELOAD
    _PRELOAD = [FAMILY_MODULES[f] for f in sorted(set(families)) if f in FAMILY_MODULES]


def preloaded_modules() -> list[str]:
    """The family packages a warm process imports before its first cell."""
    from energyopt.core.registry import FAMILY_MODULES

    return list(FAMILY_MODULES.values()) if _PRELOAD is None else list(_PRELOAD)


def _kill_group(pid: int | None) -> None:
    """SIGKILL the process group led by ``pid`` (the cell and every child it started)."""
    if pid is None:
        return
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # already gone, or never became a group leader: the direct kill below suffices


def _crash_message(code: int | None, log_path: str) -> str:
    try:
        tail = Path(log_path).read_text(errors="replace").strip()[-_STDERR_TAIL:]
    except OSError:
        tail = ""
    how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit status {code}"
    last = tail.splitlines()[-1] if tail else "no error output"
    return f"worker process {how}: {last}"


def _read(fd: int, deadline: float | None, until: bytes | None = None) -> tuple[bytes, str]:
    """Read ``fd`` until EOF (``"eof"``), ``until`` (``"line"``) or ``deadline`` (``"timeout"``).

    Results can be tens of megabytes (a GPT-3 8x96 frontier with its plans: 71 MB), so
    the chunks go into one growing buffer and only the new bytes are searched.
    """
    buf = bytearray()
    while True:
        left = None if deadline is None else deadline - time.perf_counter()
        if left is not None and left <= 0:
            return bytes(buf), "timeout"
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            continue
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return bytes(buf), "eof"
        start = max(0, len(buf) - len(until or b"") + 1)
        buf += chunk
        if until is not None and buf.find(until, start) != -1:
            return bytes(buf), "line"


def _kill(proc: subprocess.Popen, spec: dict[str, Any], tick: float, why: str) -> dict[str, Any]:
    _kill_group(proc.pid)
    proc.kill()
    proc.wait()
    wall = time.perf_counter() - tick
    return _record(spec, KILLED, None, f"killed after {wall:.1f} s wall-clock: {why}", wall)


def _record(
    spec: dict[str, Any], outcome: str, result: dict[str, Any] | None, message: str, wall: float
) -> dict[str, Any]:
    return {
        "key": spec["key"],
        "outcome": outcome,
        "result": result,
        "message": message,
        "wall_s": wall,
    }
