import json

from energyopt.cli import main
from energyopt.pipeline import random_dag_instance


def test_solve_table_and_json(tmp_path, capsys):
    inst = random_dag_instance(6, 3, seed=2)
    path = tmp_path / "i.json"
    inst.to_json(path)
    assert main(["solve", str(path), "--method", "highs", "--method", "bruteforce"]) == 0
    out = capsys.readouterr().out
    assert "highs" in out and "bruteforce" in out and "optimal" in out
    assert main(["solve", str(path), "-m", "highs", "--json", "--deadline", "10"]) == 0
    rec = json.loads(capsys.readouterr().out.splitlines()[0])
    assert rec["method"] == "highs" and rec["status"] == "optimal"
    assert rec["extra"]["iteration_time_s"] <= 10


def test_cli_errors_are_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    assert main(["solve", str(bad), "-m", "highs"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bad.json" in err[0] and "expected a JSON object" in err[0]
    path = tmp_path / "i.json"
    random_dag_instance(4, seed=0).to_json(path)
    assert main(["solve", str(path), "-m", "nope"]) == 2
    assert "unknown method 'nope'" in capsys.readouterr().err
    assert main(["solve", str(path), "-m", "highs", "-o", "nonsense"]) == 2
    assert "KEY=VALUE" in capsys.readouterr().err


def test_methods_listing(capsys):
    assert main(["methods", "pipeline"]) == 0
    assert "exact-frontier" in capsys.readouterr().out


def test_help_imports_no_solver_stack():
    # Issue 17: `energyopt --help` took 1.8-2.3 s because it imported every family and
    # Pyomo; the parser must come without pandas, Pyomo or any family.
    import subprocess
    import sys

    code = (
        "import sys, energyopt.cli as c; c.build_parser(); "
        "heavy = [m for m in ('pandas', 'pyomo', 'energyopt.pipeline', 'energyopt.capacity') "
        "if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_methods_json_lists_kinds_and_option_defaults(capsys):
    import json

    from energyopt.cli import main

    assert main(["methods", "pipeline", "--json"]) == 0
    rows = {r["method"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["highs"]["kind"] == "exact" and rows["perseus"]["frontier"] is True
    formulation = rows["highs"]["options"]["formulation"]
    assert formulation["default"] == "incremental" and formulation["type"] == "str"
    assert formulation["choices"] == ["incremental", "assignment"]
    assert "time_limit" not in rows["highs"]["options"]
    assert main(["methods", "nope"]) == 2
