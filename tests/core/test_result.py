import json

from energyopt.core.result import FrontierPoint, Result
from energyopt.core.status import SolutionStatus, TerminationReason


def _result(**kw):
    base = dict(
        family="pipeline",
        instance_id="abc",
        method="m",
        termination=TerminationReason.OPTIMAL,
        status=SolutionStatus.OPTIMAL,
        objective=10.0,
        bound=9.0,
    )
    base.update(kw)
    return Result(**base)


def test_result_fields_and_gap():
    r = _result()
    assert r.gap == (10.0 - 9.0) / 10.0
    assert r.has_solution
    assert not _result(status=SolutionStatus.NONE, objective=None).has_solution
    assert _result(bound=None).gap is None


def test_result_json_is_plain():
    r = _result(frontier=(FrontierPoint(1.0, 2.0, None, float("inf")),), extra={"n": 3})
    data = json.loads(r.to_json())
    assert data["termination"] == "optimal" and data["status"] == "optimal"
    assert data["frontier"][0]["bound"] is None  # non-finite numbers become null
    assert data["extra"] == {"n": 3}


def test_statuses_print_as_their_values_and_results_as_one_line():
    # Issue 16: the README's print showed "TerminationReason.TIME_LIMIT".
    assert str(TerminationReason.TIME_LIMIT) == "time_limit"
    assert f"{SolutionStatus.FEASIBLE}" == "feasible"
    r = _result(
        termination=TerminationReason.TIME_LIMIT,
        status=SolutionStatus.FEASIBLE,
        objective=110.0,
        bound=100.0,
    )
    text = str(r)
    assert "time_limit (feasible)" in text and "gap 9.091 %" in text and "\n" not in text


def test_cli_version(capsys):
    import pytest

    from energyopt.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0 and capsys.readouterr().out.startswith("energyopt ")
