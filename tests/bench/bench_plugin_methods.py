"""Extra PEM methods for the bench tests, loaded ONLY in subprocesses via ``--plugin``.

Never import this module in the pytest process: it would add methods to the
``pipeline`` family registry that other tests enumerate.

Every call appends ``<method> <instance_id> <seed>`` to the file named by the
environment variable ``BENCH_TEST_LOG`` (when set), so a test can count how many
times each cell was computed.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time

from energyopt.core.methodoptions import number
from energyopt.core.registry import EvaluationMismatchError, register
from energyopt.pipeline.methods import solve_bruteforce

_MAIN = getattr(getattr(sys.modules.get("__main__"), "__spec__", None), "name", "")
if os.environ.get("BENCH_TEST_INTERRUPT_PLANNING") and _MAIN != "energyopt.bench.cellserver":
    # A Ctrl-C while ``bench`` plans (this plugin is imported then): the cell server has
    # started; the bench must stop it and exit quietly. Only the bench process is
    # interrupted: a real Ctrl-C reaches the server too, which ignores it, but the server
    # inherits this variable and may import the plugin (a loaded machine gives it time to).
    raise KeyboardInterrupt


def _log(method: str, instance, seed) -> None:
    path = os.environ.get("BENCH_TEST_LOG")
    if path:
        with open(path, "a") as fh:
            fh.write(f"{method} {instance.instance_id} {seed}\n")


@register(
    "pipeline", "test-sleep", exact=True, options=(number("sleep_s", 0.3, "pause", minimum=0.0),)
)
def sleep_then_bruteforce(instance, *, time_limit=None, seed=None, sleep_s: float = 0.3):
    """Brute force after a pause, to make cells last long enough to be killed mid-run."""
    _log("test-sleep", instance, seed)
    time.sleep(sleep_s)
    res = solve_bruteforce(instance)
    return dataclasses.replace(res, method="test-sleep")


@register("pipeline", "test-hang", exact=False)
def hang(instance, *, time_limit=None, seed=None):
    """Ignores its time limit: the runner must kill it."""
    _log("test-hang", instance, seed)
    time.sleep(3600)


@register("pipeline", "test-crash", exact=False)
def crash(instance, *, time_limit=None, seed=None):
    """Takes the interpreter down, as a segfaulting solver would."""
    os._exit(3)


@register("pipeline", "test-mismatch", exact=False)
def mismatch(instance, *, time_limit=None, seed=None):
    """Raises what a method raises when its solver and the evaluator disagree."""
    raise EvaluationMismatchError("solver says 1 J, evaluator says 2 J")


@register("pipeline", "test-hang-child", exact=False)
def hang_with_child(instance, *, time_limit=None, seed=None):
    """Starts a child that outlives its time limit: the kill must reach it too.

    The child's pid is written to ``BENCH_TEST_CHILD_PID`` so the test can check it died.
    """
    import subprocess

    child = subprocess.Popen(["sleep", "3600"])
    with open(os.environ["BENCH_TEST_CHILD_PID"], "w") as fh:
        fh.write(str(child.pid))
    time.sleep(3600)


@register("pipeline", "test-modules", exact=True)
def report_modules(instance, *, time_limit=None, seed=None):
    """Brute force, after writing what the cell's process inherited from the cell server.

    Writes a JSON object to the file named by ``BENCH_TEST_MODULES``: whether
    ``scipy.stats`` and Pyomo were imported before the method ran, whether the garbage
    collector is on, and ``scipy.stats.norm.cdf(0)`` read through Pyomo's deferred
    ``scipy`` (so that a method that needs ``scipy.stats`` still gets it).
    """
    import gc
    import json
    import sys

    before = {m: m in sys.modules for m in ("scipy.stats", "scipy.integrate", "pyomo.environ")}
    from pyomo.common.dependencies import scipy

    before["gc_enabled"] = gc.isenabled()
    before["norm_cdf_0"] = float(scipy.stats.norm.cdf(0.0))
    with open(os.environ["BENCH_TEST_MODULES"], "w") as fh:
        json.dump(before, fh)
    res = solve_bruteforce(instance)
    return dataclasses.replace(res, method="test-modules")
