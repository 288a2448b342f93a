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

The client (:func:`energyopt.bench.cellclient.run_cell_warm`, in the caller's or the Dask
worker's thread) enforces the time limit: ``time_limit_s + grace_s`` after ``ready`` it
kills the cell's process group (the child leads a group of its own, so the method's
children die too). A cell that hangs or crashes takes only its own process with it; the
worker, its server and the results it has already returned are untouched. When the process
that started the server dies, the server sees its standard input close, kills its cells and
exits; it also exits quietly when that process closed its pipe before the server was ready.
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import select
import selectors
import signal
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from energyopt.bench.cells import kill_group

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
        if not _tell_ready():
            return  # the process that started us is gone before we were ready
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
            kill_group(pid)
            _kill_pid(pid)
        Path(path).unlink(missing_ok=True)


def _tell_ready() -> bool:
    """Write ``ready`` to the process that started the server; ``False`` when it is gone
    (its end of the pipe closed: it stopped, e.g. on a bad argument, before we were ready)."""
    try:
        sys.stdout.write("ready\n")
        sys.stdout.flush()
    except BrokenPipeError:
        return False
    return True


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


def _kill_pid(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def main() -> NoReturn:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the client's to handle
    try:
        serve(sys.argv[1], sys.argv[2:])
    except BrokenPipeError:
        pass  # the process that started us is gone: nobody is left to tell
    # Nothing may be written to a closed pipe on the way out either (no traceback from
    # the interpreter's final flush): standard output goes nowhere from here.
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    # Its cells are killed and its socket removed: nothing is left to clean up, and
    # tearing down the warm interpreter (1,650 modules) took about 0.1 s, which whoever reads
    # the bench's output to its end waits for (the server shares its standard error).
    # The cells end the same way.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
