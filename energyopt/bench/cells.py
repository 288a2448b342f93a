"""One benchmark cell, (instance, method, seed), and the separate process that solves it.

Every cell runs in a fresh Python process (``python -m energyopt.bench.worker``), so
that a solver that ignores its time limit, leaks memory or crashes the interpreter
takes only its own cell with it. The parent waits ``time_limit_s + grace_s`` seconds
of wall-clock time (process start-up and model building included), then kills the
process and records the cell as ``killed``.

The same :func:`run_cell` runs under both executors (local threads or Dask workers):
it takes and returns plain dictionaries, so that a Dask worker on another machine
needs nothing but this package.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import energyopt

#: Outcomes of a cell. Only ``finished`` cells carry the method's own Result.
FINISHED, KILLED, CRASHED, ERROR = "finished", "killed", "crashed", "error"
OUTCOMES = (FINISHED, KILLED, CRASHED, ERROR)

#: Seconds a cell may run past its time limit before it is killed: process
#: start-up (about 0.5 s), imports, model building and writing the result.
DEFAULT_GRACE_S = 10.0

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
        Where the instance came from (``pipeline.suite('smoke')[3]`` or a path).
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


def run_cell(spec: dict[str, Any]) -> dict[str, Any]:
    """Solve one cell in a fresh process and return its record (never raises for the cell).

    Returns
    -------
    dict
        ``key``, ``outcome`` (one of :data:`OUTCOMES`), ``result`` (``Result.to_dict()``
        for finished cells, else ``None``), ``message``, ``wall_s``.
    """
    env = dict(os.environ)
    # The worker must import this very package, wherever the caller's cwd is.
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (_package_root(), os.getcwd(), env.get("PYTHONPATH", "")) if p
    )
    tick = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "energyopt.bench.worker"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    kill_after = spec.get("kill_after_s")
    if kill_after is None and spec.get("time_limit_s") is not None:
        kill_after = float(spec["time_limit_s"]) + float(spec.get("grace_s", DEFAULT_GRACE_S))
    try:
        out, err = proc.communicate(json.dumps(spec), timeout=kill_after)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        wall = time.perf_counter() - tick
        return _record(
            spec,
            KILLED,
            None,
            f"killed after {wall:.1f} s wall-clock: time limit {spec['time_limit_s']} s "
            f"+ grace {spec.get('grace_s', DEFAULT_GRACE_S)} s",
            wall,
        )
    except BaseException:
        # Ctrl-C or a cancelled Dask task: take the process down with us.
        proc.kill()
        proc.communicate()
        raise
    wall = time.perf_counter() - tick
    tail = err.strip()[-_STDERR_TAIL:]
    if proc.returncode != 0:
        how = (
            f"killed by signal {-proc.returncode}"
            if proc.returncode < 0
            else f"exit status {proc.returncode}"
        )
        last = tail.splitlines()[-1] if tail else "no error output"
        return _record(spec, CRASHED, None, f"worker process {how}: {last}", wall)
    try:
        payload = json.loads(out)
    except json.JSONDecodeError:
        return _record(spec, CRASHED, None, f"worker wrote no result: {tail[-300:]}", wall)
    if "error" in payload:
        return _record(spec, ERROR, None, payload["error"], wall)
    return _record(spec, FINISHED, payload["result"], payload["result"].get("message", ""), wall)


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
