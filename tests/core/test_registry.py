import pytest

import energyopt
from energyopt.core import registry
from energyopt.core.registry import EvaluationMismatchError, register
from energyopt.core.result import Result
from energyopt.core.status import SolutionStatus, TerminationReason
from energyopt.pipeline import random_dag_instance


@pytest.fixture(autouse=True)
def _forget_test_methods():
    # Methods registered here must not leak into other tests that iterate over the registry.
    yield
    for name in [n for n in registry._REGISTRY.get("pipeline", {}) if n.startswith("test-")]:
        del registry._REGISTRY["pipeline"][name]


def test_unknown_method_lists_the_known_ones():
    inst = random_dag_instance(4, seed=0)
    with pytest.raises(ValueError, match=r"unknown method .nope.*highs"):
        energyopt.solve(inst, "nope")


def test_unknown_option_is_a_clear_error():
    inst = random_dag_instance(4, seed=0)
    with pytest.raises(ValueError, match="bogus"):
        energyopt.solve(inst, "highs", bogus=1)


def test_not_an_instance():
    with pytest.raises(TypeError, match="not a problem instance"):
        energyopt.solve(object(), "highs")


def test_bad_time_limit():
    with pytest.raises(ValueError, match="time_limit"):
        energyopt.solve(random_dag_instance(4, seed=0), "highs", time_limit=0)


def test_method_failure_becomes_an_error_result():
    @register("pipeline", "test-failing", exact=False)
    def failing(instance, *, time_limit=None, seed=None):
        raise RuntimeError("solver exploded")

    r = energyopt.solve(random_dag_instance(4, seed=0), "test-failing", seed=3)
    assert r.termination is TerminationReason.ERROR
    assert r.status is SolutionStatus.NONE
    assert r.objective is None and r.bound is None
    assert "solver exploded" in r.message and r.seed == 3


def test_evaluation_mismatch_is_raised_not_hidden():
    @register("pipeline", "test-mismatch", exact=False)
    def mismatch(instance, *, time_limit=None, seed=None) -> Result:
        raise EvaluationMismatchError("objective disagrees")

    with pytest.raises(EvaluationMismatchError):
        energyopt.solve(random_dag_instance(4, seed=0), "test-mismatch")


def test_registry_lists_pipeline_methods():
    names = energyopt.methods("pipeline")
    for name in ("highs", "cpsat", "bruteforce", "exact-frontier"):
        assert names[name].exact
