"""The warm cell server: the solver stack imported once, one forked process per cell.

Each ``bench`` process, and each Dask worker, starts one *cell server*
(``python -m energyopt.bench.cellserver``; on a Dask worker
:class:`energyopt.bench.daskplugin.CellServerPlugin` starts it when the worker joins): a
fresh interpreter that imports the package and its families once, listens on a Unix
socket, and keeps a few forked copies of itself waiting there (spares): each cell runs in
one, which is then replaced. A cell starts at once, and forking a warm interpreter costs
milliseconds; the imports are paid once per worker, not once per cell. A fresh
interpreter rather than ``multiprocessing``'s fork server, because a ``dask worker`` runs
tasks in a daemonic process, which ``multiprocessing`` does not let have children, and
because the server can import a family the first time one of its cells arrives.

Protocol on one connection per cell (lines of UTF-8 text):

* client -> a spare: ``{"spec": <cell spec>, "log": <path>}``
* the spare, now the cell's process -> client: ``ready <pid>`` once the instance is
  loaded, then the payload (:func:`energyopt.bench.worker.solve_spec`) as one JSON line;
* server -> client: ``exit <code>`` once the cell's process has ended (negative: killed by
  signal).

Planning a batch (:meth:`CellServer.plan`) uses the same connection: the client sends
``{"plan": <arguments of plan_cells>}``, and the spare answers with the cells, or the
exception planning raised, as one JSON line (the server's ``exit`` line, if it died).

The client (:func:`run_cell_warm`, in the caller's or the Dask worker's thread) enforces
the time limit: ``time_limit_s + grace_s`` after ``ready`` it kills the cell's process
group (the child leads a group of its own, so the method's children die too). A cell that
hangs or crashes takes only its own process with it; the worker, its server and the
results it has already returned are untouched. When the process that started the server
dies, the server sees its standard input close, kills its cells and exits.
"""

from __future__ import annotations

import dataclasses
import gc
import importlib
import json
import os
import select
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from energyopt.bench import cells as _cells

#: Seconds between two reaping passes of the server (ended cells are reported then).
_REAP_S = 0.02
#: Forked processes kept waiting for the next cells (cells arriving at once beyond these
#: wait for a fork).
SPARES = 2
#: Solver modules the methods import on first use: imported by the server (where
#: installed), so that no cell pays for them.
SOLVER_MODULES = (
    "pyomo.environ",
    "pyomo.contrib.solver.solvers.highs",
    "highspy",
    "ortools.graph.python.max_flow",
)
#: Modules that some cells need and planning does not: imported once the server is ready,
#: while the first requests (the bench's planning, the first cell) run in the spares forked
#: before, so that the serial start does not wait for them; then those spares are replaced.
#: CP-SAT's model imports pandas, which nothing else the cells and planning run needs
#: (0.14 s of CPU with it); SciPy's optimize fits a heuristic's cost models (0.12 s beyond
#: the SciPy the families import).
LATE_MODULES = ("ortools.sat.python.cp_model", "scipy.optimize")


# -- the server (its own interpreter) -------------------------------------------------
def serve(path: str, preload: list[str]) -> None:
    """Import ``preload``, listen on the Unix socket ``path``, keep spare processes forked.

    The server is ready (and the first spares are forked) before it imports
    :data:`LATE_MODULES`, which it does while the first requests run; the spares forked
    before are then replaced, so that later cells inherit those modules too.
    """
    warm(preload)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    listener.setblocking(False)  # spares poll it, so that they also watch their parent
    server = _Server(listener)
    sel = selectors.DefaultSelector()
    sel.register(server.ctrl, selectors.EVENT_READ, "took")
    sel.register(sys.stdin, selectors.EVENT_READ, "parent")
    try:
        server.fill()
        sys.stdout.write("ready\n")
        sys.stdout.flush()
        for module in LATE_MODULES:
            warm([module], solvers=False)
            server.reap()  # between two imports, the cells that ended are reported
        server.renew()
        while True:
            for key, _ in sel.select(_REAP_S):
                if key.data == "parent" and not os.read(sys.stdin.fileno(), 1 << 12):
                    return  # the process that started us is gone
            server.reap()
    finally:
        for pid in [*server.cells, *server.spares, *server.retired]:
            _cells._kill_group(pid)
            _kill_pid(pid)
        Path(path).unlink(missing_ok=True)


def warm(preload: Sequence[str], *, solvers: bool = True) -> None:
    """Import what the cells need (``preload``, the solver modules unless ``solvers`` is
    false) and do the first-call work they would repeat, once, before the first fork.

    These imports are most of a ``bench`` run's serial start, so they skip what no cell
    needs (:func:`_skip_pyomo_scipy_imports`) and run without the cyclic garbage collector:
    its passes over the growing heap took a tenth of their CPU time (0.1 s), and imports
    leave almost no cyclic garbage. Whatever they leave is frozen with the rest.
    """
    gc.disable()
    try:
        _skip_pyomo_scipy_imports()
        modules = ["energyopt.bench.worker", *preload, *SOLVER_MODULES] if solvers else preload
        for module in modules:
            try:
                importlib.import_module(module)
            except ImportError:
                pass  # not installed: the cells that need it report the error themselves
        _warm_up()
    finally:
        # Objects imported so far stay out of the garbage collector's way: a collection in
        # a forked cell would otherwise touch (and so copy) every page of the warm
        # interpreter.
        gc.freeze()
        gc.enable()


def _skip_pyomo_scipy_imports() -> None:
    """Keep Pyomo from importing SciPy's ``stats`` and ``integrate`` in the server.

    Pyomo defers its SciPy import, with a callback that, once anything imports ``scipy``
    (here ``scipy.sparse``, for the HiGHS LP models), imports ``scipy.stats``,
    ``scipy.integrate``, ``scipy.sparse`` and ``scipy.spatial`` too: 175 modules and a
    quarter of the server's import time (0.23 s of CPU), for submodules that no method
    uses. Dropping the callback leaves Pyomo's deferred ``scipy`` working (it resolves to
    the same module, and SciPy imports a submodule on first attribute access), so a cell
    that needs ``scipy.stats`` still gets it, at its own expense. Where Pyomo is missing or
    has changed this callback, nothing is done.
    """
    try:
        from pyomo.common import dependencies
    except ImportError:
        return
    indicator = getattr(dependencies, "scipy_available", None)
    finalize = getattr(dependencies, "_finalize_scipy", None)
    if finalize is not None and getattr(indicator, "_callback", None) is finalize:
        indicator._callback = None


def _warm_up() -> None:
    """Do here, once, the first-call work every cell would otherwise repeat in its process.

    Loading an instance asks :func:`energyopt.core.registry.families`, whose first call
    reads the entry points of every installed distribution: 3 ms of CPU in each cell.
    """
    from energyopt.core.registry import families

    families()


class _Server:
    """The spare processes and the running cells of a cell server.

    :data:`SPARES` forked processes wait in ``accept`` on the listening socket, so a cell
    starts in one at once, without waiting for a fork or for this process. A spare that
    takes a connection passes it here (``SCM_RIGHTS``, with its pid and the modules it had
    to import itself), becomes the cell's process, and is replaced by a new spare; once it
    has ended, its client is told how (``exit <code>``).
    """

    def __init__(self, listener: socket.socket) -> None:
        self.listener = listener
        self.ctrl, self.ctrl_child = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.ctrl.setblocking(False)
        self.spares: set[int] = set()
        self.retired: set[int] = set()  # spares told to leave, not yet reaped
        self.cells: dict[int, socket.socket] = {}
        # The spares forked before the late imports watch this pipe: see renew.
        self.retire_r: int | None
        self.retire_w: int | None
        self.retire_r, self.retire_w = os.pipe()

    def fill(self) -> None:
        while len(self.spares) < SPARES:
            pid = os.fork()
            if pid == 0:
                inherited = [self.ctrl, *self.cells.values()]
                _spare(self.listener, self.ctrl_child, inherited, self.retire_r)
            self.spares.add(pid)

    def renew(self) -> None:
        """Replace the waiting spares by forks of the server as it is now (after the late
        imports): each sees the retire pipe readable and exits without taking a cell; one
        that took a cell just before runs it, importing what it lacks, as any cell."""
        os.write(self.retire_w, b"x")
        os.close(self.retire_r)
        os.close(self.retire_w)
        self.retire_r = self.retire_w = None
        self.retired |= self.spares
        self.spares.clear()
        self.fill()

    def took(self) -> None:
        """Take the messages of spares that have become cells; import what they needed."""
        while True:
            try:
                msg, fds, _, _ = socket.recv_fds(self.ctrl, 1 << 16, 1)
            except BlockingIOError:
                break
            pid_text, _, modules = msg.decode().partition(" ")
            pid = int(pid_text)
            self.spares.discard(pid)
            self.retired.discard(pid)
            if fds:
                self.cells[pid] = socket.socket(fileno=fds[0])
            for module in modules.split():
                try:
                    importlib.import_module(module)  # here once: later spares have it
                except Exception:
                    pass  # the cells import it themselves and report the error
                gc.freeze()
        self.fill()

    def reap(self) -> None:
        """Tell each client whose cell has ended how it ended; replace dead spares."""
        ended = []
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            ended.append((pid, status))
        # A cell sends its message before it can end, so the message of every process
        # reaped above is waiting now. Read before reaping, a message sent between the
        # reading and the reaping (a cell that crashed at once) left its client waiting,
        # without an ``exit`` line, until the time limit killed the dead cell.
        self.took()
        for pid, status in ended:
            self.spares.discard(pid)
            self.retired.discard(pid)
            conn = self.cells.pop(pid, None)
            if conn is not None:
                try:
                    conn.sendall(f"exit {os.waitstatus_to_exitcode(status)}\n".encode())
                except OSError:
                    pass  # the client gave up on this cell
                conn.close()
        self.fill()


def _spare(
    listener: socket.socket, ctrl: socket.socket, inherited: list[socket.socket], retire: int | None
) -> None:
    """A forked spare: wait for a cell, report it to the server, solve it, exit (or exit
    at once when ``retire`` becomes readable)."""
    code = 1
    try:
        for other in inherited:  # else a client waits for EOF until this cell ends too
            other.close()
        conn = _accept(listener, retire)
        if conn is None:
            os._exit(0)  # the process that started the server is gone, or a newer spare
        listener.close()
        with conn.makefile("rb") as fh:
            request = json.loads(fh.readline())
        if "plan" in request:
            socket.send_fds(ctrl, [str(os.getpid()).encode()], [conn.fileno()])
            ctrl.close()
            _plan(conn, request["plan"])
            code = 0
        else:
            spec, log_path = request["spec"], request["log"]
            missing = [m for m in _modules(spec) if m not in sys.modules]
            msg = f"{os.getpid()} {' '.join(missing)}".encode()
            socket.send_fds(ctrl, [msg], [conn.fileno()])
            ctrl.close()
            _solve(conn, spec, log_path)
            code = 0
            # The result is sent: tearing down this copy of the warm interpreter (5 ms of
            # CPU) may wait for the cells still running.
            os.nice(19)
    except BaseException:
        pass
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _accept(listener: socket.socket, retire: int | None) -> socket.socket | None:
    """The next cell's connection, or ``None`` once standard input (the pipe from the process
    that started the server) closes: spares never outlive it, even if the server dies; or
    once ``retire`` is readable: the server has forked newer spares."""
    watched = [listener, sys.stdin, *([] if retire is None else [retire])]
    while True:
        ready, _, _ = select.select(watched, [], [])
        if sys.stdin in ready and not os.read(sys.stdin.fileno(), 1 << 12):
            return None
        if retire in ready:
            return None
        if listener in ready:
            try:
                conn, _ = listener.accept()
            except BlockingIOError:
                continue  # another spare took it
            conn.setblocking(True)
            return conn


def _modules(spec: dict[str, Any]) -> list[str]:
    """The family package and plugins a cell imports."""
    from energyopt.core.registry import FAMILY_MODULES

    family = FAMILY_MODULES.get(str(spec.get("family")))
    return [*([family] if family else []), *map(str, spec.get("plugins", ()))]


def _solve(conn: socket.socket, spec: dict[str, Any], log_path: str) -> None:
    """The cell's process: its own group, default signals, output to the cell's log."""
    os.setpgid(0, 0)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    log = os.open(log_path, os.O_WRONLY | os.O_TRUNC)
    os.dup2(log, 1)
    os.dup2(log, 2)
    from energyopt.bench.worker import solve_spec

    payload = solve_spec(spec, lambda: conn.sendall(f"ready {os.getpid()}\n".encode()))
    conn.sendall(json.dumps(payload).encode() + b"\n")


#: Exceptions of planning that the client raises again as they are (a bad argument or
#: instance file); any other is a bug, raised there as ``RuntimeError`` with its traceback.
_PLAN_ERRORS = ("InstanceError", "FileNotFoundError", "ValueError")


def _plan(conn: socket.socket, request: dict[str, Any]) -> None:
    """A spare that plans a batch (:func:`energyopt.bench.runner.plan_here`) and sends its
    cells (:func:`energyopt.bench.cells.cells_to_json`) or the exception, as one line."""
    os.dup2(2, 1)  # what planning prints goes where the client's errors go, not to our pipe
    os.chdir(request.pop("cwd"))  # relative instance paths are the client's
    from energyopt.bench.runner import plan_here
    from energyopt.core.errors import InstanceError

    try:
        payload = {"plan": _cells.cells_to_json(plan_here(**request))}
    except (InstanceError, FileNotFoundError, ValueError) as exc:
        kind = type(exc).__name__
        payload = {"raise": kind if kind in _PLAN_ERRORS else "ValueError", "message": str(exc)}
    except Exception:
        payload = {"raise": "RuntimeError", "message": traceback.format_exc().strip()}
    conn.sendall(json.dumps(payload).encode() + b"\n")


def _kill_pid(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def main() -> NoReturn:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the client's to handle
    serve(sys.argv[1], sys.argv[2:])
    # Its cells are killed and its socket removed: nothing is left to clean up, and
    # tearing down the warm interpreter (1,650 modules) took about 0.1 s, which whoever reads
    # the bench's output to its end waits for (the server shares its standard error).
    # The cells end the same way.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


# -- the client (the bench process, or a Dask worker) --------------------------------
class CellServer:
    """A running cell server, started from this process (``bench``, or a Dask worker)."""

    def __init__(self, preload: list[str]) -> None:
        self.dir = tempfile.mkdtemp(prefix="energyopt-cells-")
        self.path = os.path.join(self.dir, "server.sock")
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (_cells._package_root(), os.getcwd(), env.get("PYTHONPATH", "")) if p
        )
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "energyopt.bench.cellserver", self.path, *preload],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            start_new_session=True,
        )
        self._ready = False
        self._lock = threading.Lock()

    def wait_ready(self) -> None:
        """Block until the server has done its imports (bounded by the start-up timeout)."""
        with self._lock:
            if self._ready:
                return
            deadline = time.perf_counter() + _cells.STARTUP_TIMEOUT_S
            out, state = _cells._read(self.proc.stdout.fileno(), deadline, until=b"\n")
            if state != "line":
                self.close()
                raise RuntimeError(f"cell server did not start ({state}): {out[-200:]!r}")
            self._ready = True

    def plan(self, request: dict[str, Any]) -> list[_cells.Cell]:
        """:func:`energyopt.bench.runner.plan_cells` in a process forked from the server
        (which has imported the families), ``request`` being its arguments; raises what
        planning raised."""
        self.wait_ready()
        ask = json.dumps({"plan": {**request, "cwd": os.getcwd()}}).encode() + b"\n"
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                conn.connect(self.path)
                conn.sendall(ask)
                with conn.makefile("rb") as fh:
                    line = fh.readline()  # the answer, or the server's ``exit`` if it died
        except OSError as exc:  # not a user's file: the server's socket is gone
            raise RuntimeError(f"planning in the cell server failed ({exc})") from None
        if not line.startswith(b"{"):
            why = line.decode(errors="replace").strip() or "no answer"
            raise RuntimeError(f"planning in the cell server failed ({why})")
        answer = json.loads(line)
        if "plan" in answer:
            return _cells.cells_from_json(answer["plan"])
        kind, message = answer["raise"], answer["message"]
        if kind == "RuntimeError":
            raise RuntimeError(f"planning in the cell server failed:\n{message}")
        from energyopt.core.errors import InstanceError

        kinds = {"InstanceError": InstanceError, "FileNotFoundError": FileNotFoundError}
        raise kinds.get(kind, ValueError)(message)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        """Stop the server (it kills the cells still running)."""
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                _cells._kill_group(self.proc.pid)
                self.proc.wait()
        Path(self.path).unlink(missing_ok=True)
        try:
            os.rmdir(self.dir)
        except OSError:
            pass


_SERVER: CellServer | None = None
_SERVER_LOCK = threading.Lock()


def start_server(preload: list[str] | None = None) -> CellServer:
    """This process's cell server, started if it is not running (every family preloaded
    unless ``preload`` names the modules)."""
    global _SERVER
    with _SERVER_LOCK:
        if _SERVER is None or not _SERVER.alive():
            if preload is None:
                from energyopt.core.registry import FAMILY_MODULES

                preload = list(FAMILY_MODULES.values())
            _SERVER = CellServer(preload)
        return _SERVER


def stop_server() -> None:
    global _SERVER
    with _SERVER_LOCK:
        if _SERVER is not None:
            _SERVER.close()
            _SERVER = None


def run_cell_warm(spec: dict[str, Any]) -> dict[str, Any]:
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


def _await_cell(conn: socket.socket, spec: dict[str, Any], tick: float, log: str) -> dict:
    """Read ``ready``, the payload and ``exit`` from ``conn``; kill the cell at its limit."""
    reader = _Lines(conn.fileno())
    pid = None
    try:
        if not reader.until(tick + _cells.STARTUP_TIMEOUT_S, lambda r: r.lines):
            why = f"did not start within {_cells.STARTUP_TIMEOUT_S:g} s"
            return _kill(pid, reader, spec, tick, why)
        first = reader.lines[0].split() if reader.lines else []
        if first[:1] == [b"ready"]:
            pid = int(first[1])
            _cells._LIVE.add(_CellProcess(pid))
            if _cells._STOP.is_set():  # Ctrl-C came while it started
                _cells._kill_group(pid)
            kill_after = spec.get("kill_after_s")
            deadline = None if kill_after is None else time.perf_counter() + kill_after
            if not reader.until(deadline, _ended):
                why = (
                    f"time limit {spec['time_limit_s']} s + grace "
                    f"{spec.get('grace_s', _cells.DEFAULT_GRACE_S)} s exceeded"
                )
                return _kill(pid, reader, spec, tick, why)
    except BaseException:
        _cells._kill_group(pid)  # Ctrl-C or a cancelled task takes its cell down with it
        raise
    finally:
        _cells._LIVE.discard(_CellProcess(pid))
    return _decode(reader.lines, spec, time.perf_counter() - tick, log)


@dataclasses.dataclass(frozen=True)
class _CellProcess:
    """A cell's process as :func:`energyopt.bench.cells.kill_running` sees it."""

    pid: int | None

    def kill(self) -> None:
        _cells._kill_group(self.pid)


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
            chunk, state = _cells._read(self.fd, deadline, until=b"")
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


def _decode(lines: list[bytes], spec: dict[str, Any], wall: float, log: str) -> dict[str, Any]:
    """The cell's record from the complete lines it sent (``ready``, payload, ``exit``)."""
    payload = next((json.loads(x) for x in lines if x.startswith(b"{")), None)
    codes = [int(x.split()[1]) for x in lines if x.startswith(b"exit ")]
    if payload is None:
        code = codes[0] if codes else None
        msg = _cells._crash_message(code, log)
        if not codes:
            msg = msg.replace("exit status None", "ended with its cell server")
        return _cells._record(spec, _cells.CRASHED, None, msg, wall)
    if "error" in payload:
        return _cells._record(spec, _cells.ERROR, None, payload["error"], wall)
    result = payload["result"]
    return _cells._record(spec, _cells.FINISHED, result, result.get("message", ""), wall)


def _kill(pid: int | None, reader: _Lines, spec: dict, tick: float, why: str) -> dict:
    _cells._kill_group(pid)
    reader.until(time.perf_counter() + 5, _ended)  # until the server has reaped it
    wall = time.perf_counter() - tick
    return _cells._record(
        spec, _cells.KILLED, None, f"killed after {wall:.1f} s wall-clock: {why}", wall
    )


if __name__ == "__main__":
    main()
