"""The CLI items of issue 16: -m everywhere, -o errors, --log, report beside the store,
instances from-profile, generate refusing to replace data-derived suites."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from energyopt.cli import main
from energyopt.cli.bench import default_report_dir, show_progress
from energyopt.cli.options import parse_options
from energyopt.core.registry import check_options_known, get_method
from energyopt.pipeline import random_dag_instance


def perseus_csv(stages: int = 2) -> str:
    """A Perseus stage profile: every stage's forward and backward at 1410 and 1005 MHz
    (seconds and joules per computation; slower clocks take longer and need less energy)."""
    rows = ["stage,instruction,frequency,time,energy"]
    for s in range(stages):
        for op, t, e in (("forward", 0.010, 4.0), ("backward", 0.020, 8.0)):
            rows.append(f"{s},{op},1410,{t + s / 1000},{e}")
            rows.append(f"{s},{op},1005,{1.3 * t + s / 1000},{0.75 * e}")
    return "\n".join(rows) + "\n"


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    path = tmp_path / "i.json"
    random_dag_instance(4, seed=0).to_json(path)
    return path


def test_parse_options_reads_json_values():
    assert parse_options(["a=1", "b=hull", "c=true", 'd="x"']) == {
        "a": 1,
        "b": "hull",
        "c": True,
        "d": "x",
    }
    with pytest.raises(ValueError, match="KEY=VALUE"):
        parse_options(["nonsense"])


def test_unknown_option_lists_the_valid_ones(tiny, capsys):
    assert main(["solve", str(tiny), "-m", "highs", "-o", "colour=1"]) == 2
    err = capsys.readouterr().err
    assert "unknown option(s) 'colour'" in err
    assert "formulation (incremental|assignment, default 'incremental')" in err
    with pytest.raises(ValueError, match=r"valid: .*tau_s"):
        check_options_known([get_method("pipeline", "perseus")], {"colour": 1})
    # An option that one of the selected methods takes is fine for the batch.
    methods = [get_method("pipeline", "perseus"), get_method("pipeline", "bruteforce")]
    check_options_known(methods, {"tau_s": 0.01})


@pytest.mark.parametrize(
    "instance",
    [
        None,  # the pipeline's ``tiny``
        "instances/capacity/smoke/000-random-point-0-work-conserving.json",
        "instances/powercap/smoke",
    ],
)
def test_log_shows_the_solver_log(tiny, capfd, monkeypatch, instance):
    # Issue 27: --log showed only HiGHS' banner; the presolve and solving report must show.
    # Without the re-solve that verifies an optimum (it has a log of its own).
    import energyopt.core.highs

    monkeypatch.setattr(energyopt.core.highs, "SAFE_MIP_FEASIBILITY_TOLERANCE", 0.0)
    root = Path(__file__).resolve().parents[2]
    path = tiny if instance is None else root / instance
    if path.is_dir():
        path = sorted(path.glob("*.json"))[0]
    assert main(["solve", str(path), "-m", "highs", "--log", "--time-limit", "60"]) == 0
    out = capfd.readouterr().out
    assert "Running HiGHS" in out
    assert "Presolving model" in out or "Presolve is switched off" in out, out[-2000:]
    assert "Solving report" in out, out[-2000:]
    assert main(["solve", str(path), "-m", "highs"]) == 0
    assert "Solving report" not in capfd.readouterr().out  # no log without --log


def test_tee_notes_a_method_without_a_solver(tiny, capfd):
    assert main(["solve", str(tiny), "-m", "bruteforce", "--tee"]) == 0
    assert "runs no external solver" in capfd.readouterr().err


def test_progress_only_on_a_terminal():
    class Args:
        no_progress = False

    # Under pytest stdout is captured: not a terminal, so plain output.
    assert show_progress(Args()) is False


def test_report_defaults_beside_the_store():
    assert default_report_dir("out/results.sqlite") == Path("out/results-report")


def test_bench_takes_m_repeated(tiny, tmp_path, capsys):
    store = tmp_path / "r.sqlite"
    args = ["bench", str(tiny), "--store", str(store), "--time-limit", "20"]
    assert main([*args, "-m", "bruteforce", "-m", "envpipe"]) == 0
    out = capsys.readouterr().out
    assert ": 2 cells, 0 already in the store, 2 run now (0 failed" in out
    # The former ``--methods A B`` is gone (no deprecation shims): argparse refuses it.
    with pytest.raises(SystemExit) as exc:
        main([*args, "--methods", "bruteforce", "zeus-global"])
    assert exc.value.code == 2
    assert main(["report", str(store), "--no-plots"]) == 0
    assert (tmp_path / "r-report" / "index.html").exists()


def test_from_profile_writes_an_instance_that_solve_reads(tmp_path, capsys):
    profile = tmp_path / "tiny+a100_sxm_bf16.csv"
    profile.write_text(perseus_csv())
    out = tmp_path / "pem.json"
    argv = ["instances", "from-profile", str(profile), "--schedule", "1f1b"]
    assert main([*argv, "--microbatches", "2", "--gpu", "a100", "-o", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["family"] == "pipeline" and data["p_blocking_w"] == pytest.approx(83.64)
    assert main(["solve", str(out), "-m", "bruteforce", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert rec["status"] == "optimal"
    # Without a blocking power: one line naming both ways to give it.
    assert main([*argv, "--microbatches", "2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--p-blocking" in err[0] and "a100" in err[0]
    assert main([*argv, "--microbatches", "2", "--p-blocking", "60"]) == 0
    assert json.loads(capsys.readouterr().out)["p_blocking_w"] == 60


def test_generate_refuses_to_replace_data_derived_instances(tmp_path, monkeypatch, capsys):
    import energyopt.tuning.suites as tuning_suites

    monkeypatch.setattr(tuning_suites, "DATA", tmp_path / "no-such-data")
    kept = tmp_path / "lib" / "tuning" / "paper" / "000-real.json"
    kept.parent.mkdir(parents=True)
    kept.write_text("{}")
    argv = ["instances", "generate", "--root", str(tmp_path / "lib"), "--family", "tuning"]
    assert main([*argv, "--suite", "paper"]) == 2
    err = capsys.readouterr().err
    assert "refusing to replace" in err and "summary_train.csv" in err
    assert kept.read_text() == "{}"


def test_solve_time_limit_counts_from_each_methods_start(tiny, monkeypatch):
    # Issue 27: the first method's limit counted from the process start, imports and
    # reading included. Reading now takes 1 s: the method still gets its whole limit.
    import time

    import energyopt.core.instance as instance_module
    import energyopt.core.registry as registry
    from energyopt.cli.solve import EXIT_RESERVE_S

    load, given = instance_module.load_instance, []

    def slow_load(path):
        time.sleep(1.0)
        return load(path)

    def record(instance, name, time_limit=None, **kw):
        given.append(time_limit)
        return real(instance, name, time_limit=time_limit, **kw)

    real = registry.solve
    monkeypatch.setattr(instance_module, "load_instance", slow_load)
    monkeypatch.setattr(registry, "solve", record)
    assert main(["solve", str(tiny), "-m", "bruteforce", "-m", "zeus-global",
                 "--time-limit", "100"]) == 0  # fmt: skip
    assert len(given) == 2
    for limit in given:  # 100 - the exit reserve, less the instant between clock and call
        assert 100.0 - EXIT_RESERVE_S - 0.5 < limit <= 100.0 - EXIT_RESERVE_S


def test_time_left():
    import time

    from energyopt.cli.solve import EXIT_RESERVE_S, _time_left

    # Started 2 s ago with a 10 s limit: 10 - 2 - the exit reserve is left (to rounding).
    left = _time_left(10.0, time.perf_counter() - 2.0)
    assert 10.0 - 2.0 - EXIT_RESERVE_S - 0.5 < left <= 10.0 - 2.0 - EXIT_RESERVE_S
    assert _time_left(1.0, time.perf_counter() - 5.0) == 0.01  # never 0: some methods refuse it
    assert _time_left(None, 0.0) is None


def test_envpipe_schedule_writes_a_rescheduled_instance(tmp_path, capsys):
    from energyopt.core.instance import load_instance

    src = Path(__file__).resolve().parents[2] / "instances/pipeline/paper"
    src = src / "004-synthetic-1f1b-4x8-k10-seed0.json"
    out = tmp_path / "sched.json"
    assert main(["instances", "envpipe-schedule", str(src), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "warm-up forwards per stage" in err and str(out) in err
    inst = load_instance(out)
    original = load_instance(src)
    assert inst.schedule == "explicit"
    assert inst.num_computations == original.num_computations
    assert inst.deadline_s == original.deadline_s
    # Not a 1F1B instance: one line, exit 2.
    assert main(["instances", "envpipe-schedule", str(out)]) == 2
    assert "starts from 1f1b" in capsys.readouterr().err
