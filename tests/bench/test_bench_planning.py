"""Planning runs in the bench process (no round trip through the cell server), and bad
arguments are refused before the cell server starts (issue 27, issue 28)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from benchutil import ROOT, cli

from energyopt.bench.runner import check_bench_arguments, plan_cells
from energyopt.core.errors import InstanceError


def test_planning_gives_one_cell_per_key_and_shares_instance_texts(instance_files):
    files = [str(p) for p in instance_files]
    cells = plan_cells(suite="smoke", files=files + files[:1], families=["pipeline"],
                       methods=["highs", "bruteforce"], seeds=[0, 3], options={"x": [1, 2]},
                       time_limit_s=5.0, grace_s=1.0)  # fmt: skip
    assert len(cells) == len({c.key for c in cells}) > 0
    assert {c.method for c in cells} == {"highs", "bruteforce"}
    assert all(c.options == (("x", [1, 2]),) and c.grace_s == 1.0 for c in cells)


def test_planning_starts_no_cell_server(instance_files):
    from energyopt.bench import cellclient

    cellclient.stop_server()
    plan_cells(files=instance_files[:1], methods=["highs"])
    assert cellclient._SERVER is None


def test_relative_paths_are_read_from_the_callers_directory(instance_files, monkeypatch):
    monkeypatch.chdir(instance_files[0].parent)
    (cell,) = plan_cells(files=[instance_files[1].name], methods=["highs"])
    assert cell.origin == instance_files[1].name


def test_planning_errors_are_raised_as_themselves(instance_files, tmp_path):
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


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"time_limit_s": float("inf")}, "--time-limit = inf"),
        ({"time_limit_s": -5.0}, "--time-limit = -5.0"),
        ({"time_limit_s": True}, "--time-limit = True: must be a number"),
        ({"grace_s": float("nan")}, "--grace = nan"),
        ({"jobs": 0}, "--jobs must be at least 1, got 0"),
        ({"jobs": 2.5}, "--jobs = 2.5: must be a whole number"),
        ({"suite": None, "files": []}, "nothing to run"),
    ],
)
def test_bench_arguments_are_checked_without_any_family(kw, message):
    args = {"suite": "smoke", "files": [], "time_limit_s": 5.0, "grace_s": 1.0, "jobs": 1, **kw}
    with pytest.raises(ValueError, match=message.replace(".", r"\.").replace("(", r"\(")):
        check_bench_arguments(**args)


def test_bad_time_limit_is_one_line_and_starts_no_cell_server(tmp_path):
    """Issue 27: ``--time-limit inf`` printed its error, then a ``BrokenPipeError``
    traceback from the cell server that had started before the check."""
    run = cli("bench", "--suite", "smoke", "--time-limit", "inf", "--store",
              str(tmp_path / "x.sqlite"), "--no-progress", timeout=120)  # fmt: skip
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [
        "energyopt bench: error: --time-limit = inf: must be a finite number of seconds > 0"
    ]
    assert "Traceback" not in run.stdout + run.stderr
    assert not (tmp_path / "x.sqlite").exists()


def test_server_on_a_closed_pipe_does_not_print_a_traceback(tmp_path):
    """The server writes ``ready`` into a pipe whose reader has closed it (its parent
    stopped on a bad argument before the server was ready): it exits quietly."""
    from energyopt.bench.cells import child_env

    sock = tmp_path / "s.sock"
    proc = subprocess.Popen(
        [sys.executable, "-m", "energyopt.bench.cellserver", str(sock)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=child_env(), cwd=ROOT,
    )  # fmt: skip
    proc.stdout.close()
    proc.stdin.close()  # and the parent itself is gone
    proc.wait(timeout=300)
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    assert not sock.exists()


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


def test_every_suite_given_is_planned_once():
    # Regression: `bench --suite smoke --suite paper` ran only the paper suite.
    one = plan_cells(suite="smoke", families=["capacity"], methods=["randomized-greedy"])
    both = plan_cells(
        suite=["smoke", "paper", "smoke"], families=["capacity"], methods=["randomized-greedy"]
    )
    paper = plan_cells(suite="paper", families=["capacity"], methods=["randomized-greedy"])
    assert {c.suite for c in both} == {"smoke", "paper"}
    assert {c.key for c in both} == {c.key for c in one} | {c.key for c in paper}
    with pytest.raises(ValueError, match="must be a suite name"):
        check_bench_arguments(suite=["smoke", 3], files=[], time_limit_s=1.0)
