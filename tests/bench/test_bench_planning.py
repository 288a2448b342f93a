"""Planning in the cell server: the bench process imports no family, and the cells are
those that planning in-process gives (issue 17: start-up of whole ``bench`` runs)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from benchutil import ROOT

from energyopt.bench.cells import cells_from_json, cells_to_json
from energyopt.bench.runner import plan_cells, plan_here
from energyopt.core.errors import InstanceError

#: What the families pull in; the bench process must not import any of it.
HEAVY = ("energyopt.capacity", "energyopt.pipeline", "energyopt.powercap", "energyopt.tuning",
         "pyomo", "scipy", "pandas", "highspy", "ortools", "numpy")  # fmt: skip


def test_bench_process_imports_no_family_or_solver():
    script = (
        "import json, sys\n"
        "from energyopt.bench.runner import plan_cells\n"
        "cells = plan_cells(suite='smoke', time_limit_s=5, check_options=True,"
        " options={'tau_s': 0.001})\n"
        "print(json.dumps([len(cells), sorted({c.family for c in cells}), sorted(sys.modules)]))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert run.returncode == 0, run.stderr
    count, families, modules = json.loads(run.stdout)
    assert count > 0 and len(families) >= 2
    heavy = [m for m in modules if m.split(".")[0] in HEAVY or m.startswith(HEAVY)]
    assert heavy == []


def _request(**kw):
    base = {"suite": None, "files": [], "families": None, "methods": None, "seeds": [0],
            "time_limit_s": 5.0, "options": {}, "plugins": [], "grace_s": 1.0}  # fmt: skip
    return {**base, **kw}


def test_cells_planned_in_the_server_are_those_planned_here(instance_files):
    kw = _request(suite="smoke", files=[str(p) for p in instance_files], families=["pipeline"],
                  methods=["highs", "bruteforce"], seeds=[0, 3], options={"x": [1, 2]})  # fmt: skip
    served = plan_cells(**kw)
    here = plan_here(**kw)
    assert len(served) == len(here) > 0
    assert served == here
    # One text per instance: the cells of an instance share it, as planned here.
    assert len({id(c.instance_json) for c in served}) == len({c.instance_id for c in served})
    assert cells_from_json(json.loads(json.dumps(cells_to_json(here)))) == here


def test_relative_paths_are_read_from_the_callers_directory(instance_files, monkeypatch):
    plan_cells(files=instance_files[:1], methods=["highs"])  # the server runs from here
    monkeypatch.chdir(instance_files[0].parent)
    (cell,) = plan_cells(files=[instance_files[1].name], methods=["highs"])
    assert cell.origin == instance_files[1].name


def test_planning_errors_come_back_as_raised(instance_files, tmp_path):
    with pytest.raises(ValueError, match="registered by no family here"):
        plan_cells(files=instance_files, methods=["no-such-method"])
    with pytest.raises(ValueError, match="no selected method takes this option"):
        plan_cells(files=instance_files, methods=["bruteforce"], options={"no_such_option": 1},
                   check_options=True)  # fmt: skip
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(InstanceError, match=r"bad\.json: not valid JSON"):
        plan_cells(files=[bad])
    with pytest.raises(ValueError, match="unknown family 'nope'"):
        plan_cells(suite="smoke", families=["nope"])
    with pytest.raises(ValueError, match="--plugin no_such_plugin_module"):
        plan_cells(files=instance_files, plugins=["no_such_plugin_module"])


def test_cells_inherit_no_scipy_stats_and_can_still_use_it(instance_files, tmp_path):
    """The cell server skips Pyomo's import of ``scipy.stats`` (a quarter of its start-up)
    and imports with the garbage collector off; its cells get neither, and a cell that
    asks for ``scipy.stats`` (through Pyomo's deferred ``scipy``) still gets it."""
    from benchutil import PLUGIN, cli

    report = tmp_path / "modules.json"
    run = cli(
        "bench", str(instance_files[0]), "-m", "test-modules", "--plugin", PLUGIN,
        "--store", str(tmp_path / "r.sqlite"), "--no-progress",
        env={"BENCH_TEST_MODULES": str(report)}, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    seen = json.loads(report.read_text())
    assert seen == {
        "scipy.stats": False,
        "scipy.integrate": False,
        "pyomo.environ": True,  # the solver stack is there: only the unused part is skipped
        "gc_enabled": True,
        "norm_cdf_0": 0.5,
    }


#: Modules the cell server imports before it is ready (what planning needs, and most
#: cells), and modules it leaves out of that serial start: pandas, which no method and no
#: planning of the smoke suite uses, and the modules that only some cells need, imported
#: once the server is ready (CP-SAT's, which imports pandas, and SciPy's optimize).
STARTED_WITH = ("energyopt.pipeline", "energyopt.tuning", "energyopt.powercap", "pyomo.environ",
                "highspy", "scipy.sparse")  # fmt: skip
STARTED_WITHOUT = ("pandas", "energyopt.profiles.readers", "energyopt.tuning.trace",
                   "ortools.sat.python.cp_model", "scipy.optimize")  # fmt: skip


def test_server_starts_without_pandas_and_imports_the_late_modules_once_ready():
    script = (
        "import json, sys\n"
        "from energyopt.bench import cellserver\n"
        "from energyopt.core.registry import FAMILY_MODULES\n"
        "cellserver.warm(list(FAMILY_MODULES.values()))\n"
        "ready = {m: m in sys.modules for m in sys.argv[1:]}\n"
        "cellserver.warm(cellserver.LATE_MODULES, solvers=False)\n"
        "print(json.dumps([ready, {m: m in sys.modules for m in sys.argv[1:]}]))\n"
    )
    names = [*STARTED_WITH, *STARTED_WITHOUT]
    run = subprocess.run(
        [sys.executable, "-c", script, *names], capture_output=True, text=True, cwd=ROOT,
        timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    ready, later = json.loads(run.stdout)
    assert ready == {m: m in STARTED_WITH for m in names}
    late = ("pandas", "ortools.sat.python.cp_model", "scipy.optimize")
    assert later == {m: m in STARTED_WITH or m in late for m in names}
