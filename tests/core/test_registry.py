import dataclasses
import json
from pathlib import Path

import pytest

import energyopt
from energyopt.core import methodoptions as O
from energyopt.core import registry
from energyopt.core.instance import load_instance
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


def test_methods_of_an_instance_are_those_that_run_on_it():
    from energyopt.capacity.suites import suite

    point, scenario = suite("smoke")[0], suite("smoke")[-1]
    everything = set(energyopt.methods("capacity"))
    on_point, on_scenario = (set(energyopt.methods("capacity", i)) for i in (point, scenario))
    assert on_point and on_scenario and not on_point & on_scenario
    assert on_point | on_scenario == everything
    assert {"highs", "fifo"} <= on_point and "offline-bound" in on_scenario


# --- Options declared once, checked before any work (issue 27's list, issue 28) ---

ROOT = Path(__file__).resolve().parents[2]
PIPELINE = ROOT / "instances/pipeline/smoke/000-synthetic-1f1b-2x2-k3-seed0.json"
CAPACITY = ROOT / "instances/capacity/smoke/000-random-point-0-work-conserving.json"
TUNING = ROOT / "instances/tuning/smoke/000-synthetic-1.json"

#: (file, method, option, value, what the one-line message must say): every bad value
#: of issue 27, each a traceback, an error result or a silent acceptance before.
BAD_OPTIONS = [
    (CAPACITY, "fifo", "seed", 1, "not a method option"),
    (CAPACITY, "fifo", "time_limit", 1, "not a method option"),
    (CAPACITY, "fifo", "instance", 1, "not a method option"),
    (PIPELINE, "cpsat", "energy_unit_j", -1, "must be >="),
    (PIPELINE, "cpsat", "workers", 2.5, "must be an integer"),
    (PIPELINE, "cpsat", "workers", True, "not a boolean"),
    (PIPELINE, "cpsat", "resolution_s", 0, "must be >="),
    (PIPELINE, "cpsat", "resolution_s", -1, "must be >="),
    (PIPELINE, "cpsat", "workers", "many", "not a string"),
    (PIPELINE, "exact-frontier", "max_points", -5, "must be >= 1"),
    # step_s was a deprecated, ignored option: it is gone, so any value is refused.
    (PIPELINE, "exact-frontier", "step_s", -1, "unknown option"),
    (PIPELINE, "exact-frontier", "step_s", 0, "unknown option"),
    (PIPELINE, "exact-frontier", "step_s", "x", "unknown option"),
    (PIPELINE, "lns", "window", -1, "must be > 0"),
    (PIPELINE, "lns", "reach", -1, "must be >= 0"),
    (PIPELINE, "lns", "max_idle", -1, "must be >= 1"),
    (PIPELINE, "lns", "sub_time_limit", -1, "must be > 0"),
    (PIPELINE, "perseus", "max_steps", -1, "must be >= 0"),
    (PIPELINE, "perseus", "polish", -1, "must be >= 0"),
    (PIPELINE, "perseus", "progress", "x", "true or false"),
    (PIPELINE, "perseus", "tau_s", 5e-324, "must be >="),
    (TUNING, "zeus", "probe", "x", "PowerLimitProbe"),
    (PIPELINE, "highs", "rel_gap", -1, "must be >= 0"),
]


# In Python, seed and time_limit are solve()'s own arguments (instance too): not options.
@pytest.mark.parametrize(("path", "method", "key", "value", "why"), BAD_OPTIONS[3:])
def test_bad_option_is_a_value_error_before_any_work(path, method, key, value, why, monkeypatch):
    inst = load_instance(path)
    called = []
    m = registry.get_method(inst.family, method)
    monkeypatch.setitem(
        registry._REGISTRY[inst.family],
        method,
        dataclasses.replace(m, function=lambda *a, **k: called.append(1)),
    )
    with pytest.raises(ValueError) as info:
        energyopt.solve(inst, method, **{key: value})
    message = str(info.value)
    assert "\n" not in message and key in message and why in message, message
    assert called == []  # refused before the method started


@pytest.mark.parametrize(("path", "method", "key", "value", "why"), BAD_OPTIONS)
def test_bad_option_on_the_command_line_exits_2_with_one_line(
    path, method, key, value, why, capsys
):
    from energyopt.cli import main

    text = value if isinstance(value, str) else json.dumps(value)
    rc = main(["solve", str(path), "-m", method, "-o", f"{key}={text}"])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert len(err.strip().splitlines()) == 1 and key in err and why in err, err


def test_negative_time_limit_is_shown_as_given(capsys):
    from energyopt.cli import main

    assert main(["solve", str(PIPELINE), "-m", "highs", "--time-limit", "-5"]) == 2
    err = capsys.readouterr().err
    assert "-5" in err and "-0.05" not in err, err


def test_options_pass_to_the_method_named_by_solver():
    inst = load_instance(PIPELINE)
    with pytest.raises(ValueError, match=r"method 'cpsat'.*option workers = 'x'"):
        energyopt.solve(inst, "exact-frontier", solver="cpsat", workers="x")
    with pytest.raises(ValueError, match=r"method 'highs'.*unknown option.*workers"):
        energyopt.solve(inst, "exact-frontier", workers=2)
    r = energyopt.solve(inst, "exact-frontier", solver="cpsat", workers=1, max_points=2)
    assert len(r.frontier) == 2 and r.termination is TerminationReason.ITERATION_LIMIT


def test_integral_float_is_the_integer_and_defaults_fill_in():
    inst = load_instance(PIPELINE)
    seen = {}

    @register(
        "pipeline",
        "test-options",
        exact=False,
        options=(O.integer("k", 3, "a count", minimum=0), O.flag("on", False, "a switch")),
    )
    def spy(instance, *, time_limit=None, seed=None, k=3, on=False):
        seen.update(k=k, on=on, time_limit=time_limit)
        raise RuntimeError("spy")

    energyopt.solve(inst, "test-options", k=4.0)
    assert seen == {"k": 4, "on": False, "time_limit": None} and type(seen["k"]) is int


def test_a_declaration_that_disagrees_with_the_function_fails_at_registration():
    def fn(instance, *, time_limit=None, seed=None, k: int = 3):
        raise AssertionError

    with pytest.raises(TypeError, match="default"):
        register("pipeline", "test-drift", exact=False, options=(O.integer("k", 4, "k"),))(fn)
    with pytest.raises(TypeError, match="no keyword 'j'"):
        register("pipeline", "test-drift", exact=False, options=(O.integer("j", 4, "j"),))(fn)
    with pytest.raises(ValueError, match="reserved"):
        O.integer("seed", 0, "a seed")
    with pytest.raises(ValueError, match="must be >= 1"):
        O.integer("n", 0, "n", minimum=1)  # the default is checked too


@pytest.mark.parametrize(
    ("declared", "good", "bad"),
    [
        (O.flag("b", False, ""), [True, False], [1, 0, "true", None, 1.0]),
        (O.integer("i", 2, "", minimum=0, maximum=5), [0, 5, 3.0], [-1, 6, 2.5, True, "2", None]),
        (O.integer("j", None, "", nullable=True), [None, 10**6], [10**30, float("inf")]),
        (O.number("x", 1.0, "", above=0.0), [1e-300, 1, 2.5], [0, -1, float("nan"), True, "1"]),
        (O.choice("c", "a", ("a", "b"), ""), ["a", "b"], ["A", "", 1, None]),
        (O.number("g", 0.5, "", minimum=0.0, below=1.0), [0, 0.999], [1.0, 1, -0.1]),
    ],
)
def test_option_types_and_ranges(declared, good, bad):
    for v in good:
        declared.check(v)
    for v in bad:
        with pytest.raises(ValueError, match=f"option {declared.name} = "):
            declared.check(v)


def test_every_registered_option_is_declared_with_type_and_description():
    for family in registry.families():
        for name, m in energyopt.methods(family).items():
            for o in m.options:
                d = o.to_dict()
                assert d["type"] and d["description"], (family, name, o.name)
                assert o.check(o.default) == o.default
