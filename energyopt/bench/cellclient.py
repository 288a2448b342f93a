"""Running one cell in a process of its own, from the caller's side: the warm cell
server's client, and the fresh-interpreter fallback.

:func:`run_cell` runs under both executors (local threads or Dask workers). By default
the cell's process is forked from this process's warm cell server
(:mod:`energyopt.bench.cellserver`, started here as ``python -m energyopt.bench.cellserver``);
``ENERGYOPT_BENCH_SUBPROCESS=1`` (and Windows, which has no ``fork``) runs each cell in a
fresh interpreter, ``python -m energyopt.bench.worker``, instead. Either way it takes the
cell's spec (a plain dictionary, so that a Dask worker on another machine needs nothing but
this package) and returns a :class:`~energyopt.bench.cells.CellRecord`.

The client enforces the time limit: ``time_limit_s + grace_s`` after ``ready`` it kills the
cell's process group (the child leads a group of its own, so the method's children die
too). A cell that hangs or crashes takes only its own process with it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from energyopt.bench.cells import (
    CRASHED,
    DEFAULT_GRACE_S,
    ERROR,
    KILLED,
    LIVE,
    STARTUP_TIMEOUT_S,
    STDERR_TAIL,
    STOP,
    CellRecord,
    child_env,
    crash_message,
    kill_group,
    log_tail,
    preloaded_modules,
    read_until,
)


def run_cell(spec: dict[str, Any], *, mode: str | None = None) -> CellRecord:
    """Solve one cell in a process of its own and return its record (never raises for it).

    ``mode``: ``"fork"`` (forked from this process's warm cell server) or ``"subprocess"``
    (a fresh interpreter); by default ``fork`` unless ``ENERGYOPT_BENCH_SUBPROCESS=1`` or on
    Windows (no ``fork``).
    """
    if mode is None:
        mode = "fork" if warm_cells() else "subprocess"
    if mode == "fork":
        return run_cell_warm(spec)
    if mode == "subprocess":
        return _run_subprocess(spec)
    raise ValueError(f"mode = {mode!r}: expected 'fork' or 'subprocess'")


def warm_cells() -> bool:
    """Whether cells are forked from a warm cell server here (not fresh interpreters)."""
    return os.environ.get("ENERGYOPT_BENCH_SUBPROCESS") != "1" and sys.platform != "win32"


# -- the warm cell server's client ------------------------------------------------------
#: The longest path a Unix socket may have (``sun_path`` holds 108 bytes on Linux).
_SUN_PATH_MAX = 107


def _socket_dir() -> str:
    """A new private folder for the server's socket: in the temporary folder, or in
    ``/tmp`` when that one's path is too long for a socket (a deep ``TMPDIR`` made the
    server fail with "AF_UNIX path too long")."""
    for parent in (None, "/tmp"):
        path = tempfile.mkdtemp(prefix="energyopt-cells-", dir=parent)
        if len(os.fsencode(os.path.join(path, "server.sock"))) <= _SUN_PATH_MAX:
            return path
        os.rmdir(path)
    raise OSError(f"no folder for the cell server's socket: {path} is too long a path")


class CellServer:
    """A running cell server, started from this process (``bench``, or a Dask worker)."""

    def __init__(self, preload: list[str]) -> None:
        self.dir = _socket_dir()
        self.path = os.path.join(self.dir, "server.sock")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "energyopt.bench.cellserver", self.path, *preload],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=child_env(),
            start_new_session=True,
        )
        self._ready = False
        self._lock = threading.Lock()

    def wait_ready(self) -> None:
        """Block until the server has done its imports (bounded by the start-up timeout)."""
        with self._lock:
            if self._ready:
                return
            deadline = time.perf_counter() + STARTUP_TIMEOUT_S
            out, state = read_until(self.proc.stdout.fileno(), deadline, until=b"\n")
            if state != "line":
                self.close()
                raise RuntimeError(f"cell server did not start ({state}): {out[-200:]!r}")
            self._ready = True

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        """Stop the server (it kills the cells still running)."""
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                kill_group(self.proc.pid)
                self.proc.wait()
        self.proc.stdout.close()
        Path(self.path).unlink(missing_ok=True)
        try:
            os.rmdir(self.dir)
        except OSError:
            pass


_SERVER: CellServer | None = None
_SERVER_LOCK = threading.Lock()


def start_server(preload: list[str] | None = None) -> CellServer:
    """This process's cell server, started if it is not running (the families of
    :func:`~energyopt.bench.cells.preloaded_modules` unless ``preload`` names the modules)."""
    global _SERVER
    with _SERVER_LOCK:
        if _SERVER is None or not _SERVER.alive():
            _SERVER = CellServer(preloaded_modules() if preload is None else preload)
        return _SERVER


def stop_server() -> None:
    """Stop this process's cell server, if one runs."""
    global _SERVER
    with _SERVER_LOCK:
        if _SERVER is not None:
            _SERVER.close()
            _SERVER = None


def run_cell_warm(spec: dict[str, Any]) -> CellRecord:
    """Solve one cell in a process forked from this worker's cell server; its record."""
    server = start_server()
    server.wait_ready()
    fd, log_path = tempfile.mkstemp(prefix="energyopt-cell-", suffix=".log")
    os.close(fd)
    tick = time.perf_counter()
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(server.path)
        conn.sendall(json.dumps({"spec": spec, "log": log_path}).encode() + b"\n")
        return _await_cell(conn, spec, tick, log_path)
    finally:
        conn.close()
        Path(log_path).unlink(missing_ok=True)


def _limit_message(spec: dict[str, Any]) -> str:
    grace = spec.get("grace_s", DEFAULT_GRACE_S)
    return f"time limit {spec['time_limit_s']} s + grace {grace} s exceeded"


def _await_cell(conn: socket.socket, spec: dict[str, Any], tick: float, log: str) -> CellRecord:
    """Read ``ready``, the payload and ``exit`` from ``conn``; kill the cell at its limit."""
    reader = _Lines(conn.fileno())
    pid = None
    try:
        if not reader.until(tick + STARTUP_TIMEOUT_S, lambda r: r.lines):
            why = f"did not start within {STARTUP_TIMEOUT_S:g} s"
            return _kill(pid, reader, spec, tick, why)
        first = reader.lines[0].split() if reader.lines else []
        if first[:1] == [b"ready"]:
            pid = int(first[1])
            LIVE.add(_CellProcess(pid))
            if STOP.is_set():  # Ctrl-C came while it started
                kill_group(pid)
            kill_after = spec.get("kill_after_s")
            deadline = None if kill_after is None else time.perf_counter() + kill_after
            if not reader.until(deadline, _ended):
                return _kill(pid, reader, spec, tick, _limit_message(spec))
    except BaseException:
        kill_group(pid)  # Ctrl-C or a cancelled task takes its cell down with it
        raise
    finally:
        LIVE.discard(_CellProcess(pid))
    return _decode(reader.lines, spec, time.perf_counter() - tick, log)


@dataclasses.dataclass(frozen=True)
class _CellProcess:
    """A cell's process as :func:`energyopt.bench.cells.kill_running` sees it."""

    pid: int | None

    def kill(self) -> None:
        kill_group(self.pid)


def _ended(reader: _Lines) -> bool:
    """Whether the payload (the cell's end) or the server's ``exit`` line has arrived."""
    return any(line.startswith((b"{", b"exit ")) for line in reader.lines[1:])


class _Lines:
    """What a connection has sent so far, read until a condition holds or EOF.

    ``lines`` holds the complete lines (without their newline); only the unfinished
    last line is buffered. A payload can be tens of megabytes, so only each new chunk
    is searched for newlines: re-reading the whole buffer per chunk made receiving a
    GPT-3 8x96 frontier (71 MB) take longer than the cell's time limit.
    """

    def __init__(self, fd: int) -> None:
        self.fd, self.eof = fd, False
        self.lines: list[bytes] = []
        self._partial = bytearray()

    def until(self, deadline: float | None, done: Any) -> bool:
        """Read until ``done(self)`` or EOF (``True``) or ``deadline`` (``False``)."""
        while not (self.eof or done(self)):
            chunk, state = read_until(self.fd, deadline, until=b"")
            self._add(chunk)
            if state == "timeout":
                return False
            self.eof = state == "eof"
        return True

    def _add(self, chunk: bytes) -> None:
        start = 0
        pos = chunk.find(b"\n")
        while pos != -1:
            self._partial += chunk[start:pos]
            self.lines.append(bytes(self._partial))
            self._partial.clear()
            start = pos + 1
            pos = chunk.find(b"\n", start)
        self._partial += chunk[start:]


def _decode(lines: list[bytes], spec: dict[str, Any], wall: float, log: str) -> CellRecord:
    """The cell's record from the complete lines it sent (``ready``, payload, ``exit``)."""
    payload = next((json.loads(x) for x in lines if x.startswith(b"{")), None)
    codes = [int(x.split()[1]) for x in lines if x.startswith(b"exit ")]
    if payload is None:
        msg = crash_message(codes[0] if codes else None, log_tail(log))
        if not codes:
            msg = msg.replace("exit status None", "ended with its cell server")
        return CellRecord.failed(spec, CRASHED, msg, wall)
    return _from_payload(spec, payload, wall)


def _from_payload(spec: dict[str, Any], payload: dict[str, Any], wall: float) -> CellRecord:
    """The record of a cell whose process sent ``payload`` (:func:`worker.solve_spec`)."""
    if "error" in payload:
        return CellRecord.failed(spec, ERROR, payload["error"], wall)
    return CellRecord.finished(spec, payload["result"], wall)


def _kill(pid: int | None, reader: _Lines, spec: dict, tick: float, why: str) -> CellRecord:
    kill_group(pid)
    reader.until(time.perf_counter() + 5, _ended)  # until the server has reaped it
    wall = time.perf_counter() - tick
    return CellRecord.failed(spec, KILLED, f"killed after {wall:.1f} s wall-clock: {why}", wall)


# -- a fresh interpreter per cell -------------------------------------------------------
def _run_subprocess(spec: dict[str, Any]) -> CellRecord:
    """Solve one cell in a fresh interpreter and return its record.

    The worker says ``ready`` once it has imported the package and read the
    instance; from then on it has ``time_limit_s + grace_s`` seconds of wall-clock
    time (start-up is bounded separately by :data:`STARTUP_TIMEOUT_S`, so that a
    loaded machine does not turn slow imports into killed cells).
    """
    tick = time.perf_counter()
    with tempfile.TemporaryFile() as err_file:
        # stderr goes to a file: a chatty solver cannot fill a pipe and stall the worker.
        proc = subprocess.Popen(
            [sys.executable, "-m", "energyopt.bench.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err_file,
            env=child_env(),
            # Its own process group: a kill takes the method's children with it.
            start_new_session=True,
        )
        LIVE.add(proc)
        if STOP.is_set():
            proc.kill()
        try:
            out, killed = _talk(proc, spec, tick)
            if killed is not None:
                return killed
            proc.wait()
        except BaseException:
            # Ctrl-C or a cancelled Dask task: take the process group down with us.
            kill_group(proc.pid)
            proc.kill()
            proc.wait()
            raise
        finally:
            LIVE.discard(proc)
            proc.stdout.close()
        err_file.seek(0)
        tail = err_file.read().decode(errors="replace").strip()[-STDERR_TAIL:]
    return _subprocess_record(spec, proc.returncode, out, tail, time.perf_counter() - tick)


def _talk(
    proc: subprocess.Popen, spec: dict[str, Any], tick: float
) -> tuple[bytes, CellRecord | None]:
    """Send the spec, read ``ready`` and the payload; the record of a kill, if it came to one."""
    proc.stdin.write(json.dumps(spec).encode())
    proc.stdin.close()
    out, state = read_until(proc.stdout.fileno(), tick + STARTUP_TIMEOUT_S, until=b"\n")
    if state == "timeout":
        return out, _kill_proc(proc, spec, tick, f"did not start within {STARTUP_TIMEOUT_S:g} s")
    if state == "line":
        kill_after = spec.get("kill_after_s")
        deadline = None if kill_after is None else time.perf_counter() + kill_after
        rest, state = read_until(proc.stdout.fileno(), deadline)
        out += rest
        if state == "timeout":
            return out, _kill_proc(proc, spec, tick, _limit_message(spec))
    return out, None


def _subprocess_record(
    spec: dict[str, Any], returncode: int, out: bytes, tail: str, wall: float
) -> CellRecord:
    """The record of a cell run in a fresh interpreter, from its exit and its output."""
    if returncode != 0:
        return CellRecord.failed(spec, CRASHED, crash_message(returncode, tail), wall)
    _, _, payload_text = out.partition(b"\n")
    try:
        payload = json.loads(payload_text)
    except json.JSONDecodeError:
        return CellRecord.failed(spec, CRASHED, f"worker wrote no result: {tail[-300:]}", wall)
    return _from_payload(spec, payload, wall)


def _kill_proc(proc: subprocess.Popen, spec: dict[str, Any], tick: float, why: str) -> CellRecord:
    kill_group(proc.pid)
    proc.kill()
    proc.wait()
    wall = time.perf_counter() - tick
    return CellRecord.failed(spec, KILLED, f"killed after {wall:.1f} s wall-clock: {why}", wall)
