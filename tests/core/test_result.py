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
