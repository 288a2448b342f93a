"""One benchmark cell, (instance, method, seed), what running it gave, and the process
control its runners share.

The bottom of the bench's cell modules: it imports none of them.

* :class:`Cell` is what to solve; :class:`CellRecord` is what running it in a process of
  its own gave (one type, built by both runners of :mod:`energyopt.bench.cellclient` and
  by the runner when the executor itself fails).
* :func:`kill_running` / :func:`allow_cells` stop and re-allow every cell process this
  process started; the runners register their processes in :data:`LIVE`.

Every cell runs in a process of its own, so that a solver that ignores its time limit,
leaks memory or crashes the interpreter takes only its own cell with it. Once the cell's
process has loaded its instance, the caller waits ``time_limit_s + grace_s`` seconds of
wall-clock time (model building included), then kills the process group and records the
cell as ``killed``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import select
import signal
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol

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

STDERR_TAIL = 2000


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


@dataclasses.dataclass(frozen=True)
class CellRecord:
    """What running one cell gave: the one record type every runner returns.

    Attributes
    ----------
    key
        The cell's :attr:`Cell.key`.
    outcome
        One of :data:`OUTCOMES`.
    result
        ``Result.to_dict()`` for a ``finished`` cell, else ``None``.
    message
        The method's message, or why the cell did not finish.
    wall_s
        Wall-clock seconds from the start of the cell's process to its record.
    """

    key: str
    outcome: str
    result: dict[str, Any] | None
    message: str
    wall_s: float

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ValueError(f"outcome = {self.outcome!r}: expected one of {OUTCOMES}")
        if (self.result is not None) != (self.outcome == FINISHED):
            raise ValueError(f"{self.key}: only a finished cell carries a result")

    @classmethod
    def finished(cls, spec: dict[str, Any], result: dict[str, Any], wall_s: float) -> CellRecord:
        """A cell whose method returned ``result`` (``Result.to_dict()``)."""
        return cls(spec["key"], FINISHED, result, str(result.get("message", "")), wall_s)

    @classmethod
    def failed(cls, spec: dict[str, Any], outcome: str, message: str, wall_s: float) -> CellRecord:
        """A cell that did not finish: ``killed``, ``crashed`` or ``error``."""
        return cls(spec["key"], outcome, None, message, wall_s)

    @property
    def lost(self) -> bool:
        """Whether the cell gave no usable result: it did not finish, or its method ended
        with an error. (Killed cells are lost too; :attr:`killed` tells them apart.)"""
        if self.outcome != FINISHED:
            return True
        return (self.result or {}).get("termination") == "error"

    @property
    def killed(self) -> bool:
        return self.outcome == KILLED


def package_root() -> str:
    """The folder that holds the ``energyopt`` package (for a child's ``PYTHONPATH``)."""
    return str(Path(energyopt.__file__).resolve().parents[1])


def child_env() -> dict[str, str]:
    """This process's environment, with ``PYTHONPATH`` reaching this very package."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (package_root(), os.getcwd(), env.get("PYTHONPATH", "")) if p
    )
    return env


class Killable(Protocol):
    def kill(self) -> Any: ...


#: Cell processes alive in this process (to stop them on Ctrl-C).
LIVE: set[Any] = set()
#: Set by :func:`kill_running`: cells still starting are killed as soon as they start.
STOP = threading.Event()


def allow_cells() -> None:
    """Let cells run again after :func:`kill_running` (a new batch in the same process)."""
    STOP.clear()


def kill_running() -> None:
    """Kill every cell process started by this process, and any that starts from now on."""
    STOP.set()
    for proc in list(LIVE):
        try:
            kill_group(getattr(proc, "pid", None))
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


def kill_group(pid: int | None) -> None:
    """SIGKILL the process group led by ``pid`` (the cell and every child it started)."""
    if pid is None:
        return
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # already gone, or never became a group leader: the direct kill suffices


def crash_message(code: int | None, tail: str) -> str:
    """Why a cell's process ended without a result, from its exit code and its log's tail."""
    how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit status {code}"
    last = tail.splitlines()[-1] if tail else "no error output"
    return f"worker process {how}: {last}"


def log_tail(path: str) -> str:
    """The last :data:`STDERR_TAIL` characters of a cell's log ("" when unreadable)."""
    try:
        return Path(path).read_text(errors="replace").strip()[-STDERR_TAIL:]
    except OSError:
        return ""


def read_until(fd: int, deadline: float | None, until: bytes | None = None) -> tuple[bytes, str]:
    """Read ``fd`` until EOF (``"eof"``), ``until`` (``"line"``) or ``deadline`` (``"timeout"``).

    Results can be tens of megabytes (a GPT-3 8x96 frontier with its plans: 71 MB), so the chunks go
    into one growing buffer and only the new bytes are searched.
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
