import dataclasses
import json

import pytest

from energyopt.core.instance import InstanceError, load_instance
from energyopt.pipeline import OptionTable, PemInstance, random_dag_instance, synthetic_instance
from energyopt.pipeline.schedules import Computation


def _table(*opts):
    return OptionTable(
        tuple(f for f, _, _ in opts),
        tuple(float(t) for _, t, _ in opts),
        tuple(float(e) for _, _, e in opts),
    )


def _chain(**kw):
    tables = {"a": _table((1000, 1.0, 50.0), (500, 2.0, 30.0)), "b": _table((1000, 1.0, 40.0))}
    base = dict(
        num_stages=1,
        computations=(Computation(0, "forward", 0, "a"), Computation(0, "backward", 0, "b")),
        edges=((0, 1),),
        tables=tables,
        p_blocking_w=10.0,
    )
    base.update(kw)
    return PemInstance(**base)


@pytest.mark.parametrize(
    "inst",
    [
        synthetic_instance(3, 4, 5, seed=2, deadline_s=1.0),
        random_dag_instance(8, 3, seed=5),
        synthetic_instance(2, 2, 3, schedule="gpipe", seed=1),
    ],
)
def test_json_round_trip(inst, tmp_path):
    path = tmp_path / "inst.json"
    inst.to_json(path)
    back = load_instance(path)
    assert back == inst
    assert back.instance_id == inst.instance_id
    assert PemInstance.from_json(inst.to_json()) == inst


def test_id_depends_on_content():
    a = synthetic_instance(2, 2, 3, seed=1)
    assert a.instance_id == synthetic_instance(2, 2, 3, seed=1).instance_id
    assert a.instance_id != a.with_deadline(1.0).instance_id


@pytest.mark.parametrize(
    "change,match",
    [
        (dict(p_blocking_w=-1.0), "p_blocking_w = -1.0"),
        (dict(deadline_s=0.0), "deadline_s"),
        (dict(edges=((0, 1), (1, 0))), "cycle"),
        (dict(edges=((0, 5),)), r"edges\[0\]"),
        (
            dict(computations=(Computation(3, "forward", 0, "a"),)),
            r"computations\[0\].stage = 3: unknown stage",
        ),
        (
            dict(computations=(Computation(0, "forward", 0, "zzz"),)),
            r"computations\[0\].table = 'zzz'",
        ),
        (dict(tables={"a": _table(), "b": _table((1, 1.0, 1.0))}), "empty option set"),
        (
            dict(tables={"a": _table((1000, -1.0, 5.0)), "b": _table((1, 1.0, 1.0))}),
            r"time_s\[0\] = -1.0",
        ),
        (
            dict(tables={"a": _table((1000, 1.0, float("nan"))), "b": _table((1, 1.0, 1.0))}),
            r"energy_j\[0\]",
        ),
    ],
)
def test_validation_names_field_and_value(change, match):
    with pytest.raises(InstanceError, match=match):
        _chain(**change)


def test_load_errors_name_the_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(InstanceError, match=r"bad.json: not valid JSON"):
        load_instance(bad)
    foreign = tmp_path / "foreign.json"
    foreign.write_text(json.dumps({"family": "chess"}))
    with pytest.raises(InstanceError, match=r"foreign.json: field 'family' = 'chess'"):
        load_instance(foreign)
    data = _chain().to_dict()
    data["tables"]["a"]["time_s"][0] = "fast"
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(data))
    with pytest.raises(InstanceError, match=r"broken.json: tables\['a'\].time_s\[0\] = 'fast'"):
        load_instance(broken)
    with pytest.raises(InstanceError, match="cannot read"):
        load_instance(tmp_path / "missing.json")


def test_filter_dominated_uses_effective_energy():
    # P_b = 10 W. Options (t, e): (1, 50) -> c = 40; (2, 45) -> c = 25; (3, 60) -> c = 30;
    # (2, 50) -> c = 30. (3, 60) is slower than (2, 45) and not cheaper: dropped; (2, 50) is
    # as slow as (2, 45) and dearer: dropped. (2, 45) stays although raw energy of (1, 50)
    # is only 5 J higher. A raw-energy filter would also keep these, but would drop an
    # option like (4, 50): raw 50 is not below 45, yet c = 10 is the cheapest of all.
    t = _table(
        (1400, 1.0, 50.0), (1000, 2.0, 45.0), (800, 3.0, 60.0), (900, 2.0, 50.0), (600, 4.0, 50.0)
    )
    inst = _chain(tables={"a": t, "b": _table((1, 1.0, 1.0))})
    filtered, report = inst.filter_dominated()
    assert filtered.tables["a"].sm_clock_mhz == (1400, 1000, 600)
    assert set(report.dropped["a"]) == {800, 900}
    assert report.num_dropped == 2
    assert report.to_original(filtered, (2, 0)) == (4, 0)


def test_instance_is_immutable():
    inst = _chain()
    with pytest.raises(dataclasses.FrozenInstanceError):
        inst.p_blocking_w = 3.0
    with pytest.raises(TypeError):
        inst.tables["c"] = inst.tables["a"]


def test_explicit_dag_must_order_each_stage():
    # Issue 12, item 3: two computations of stage 0 with no path between them would run
    # at once on one GPU, and Eq. 3's blocking energy would go negative.
    from energyopt.core.instance import InstanceError
    from energyopt.pipeline.instance import PemInstance
    from energyopt.pipeline.options import OptionTable
    from energyopt.pipeline.schedules import Computation

    table = {"a": OptionTable((1000,), (1.0,), (10.0,))}
    comps = (Computation(0, "forward", 0, "a"), Computation(0, "forward", 1, "a"))
    with pytest.raises(InstanceError, match="stage 0 are not ordered"):
        PemInstance(1, comps, (), table, 5.0)
    PemInstance(1, comps, ((0, 1),), table, 5.0)  # ordered: fine


@pytest.mark.parametrize("seed", range(30))
def test_random_dags_have_nonnegative_blocking_energy(seed):
    from energyopt.pipeline import random_dag_instance
    from energyopt.pipeline.evaluator import evaluate, fastest_choice

    inst = random_dag_instance(6, 3, seed=seed, num_stages=1 + seed % 3)
    ev = evaluate(inst, fastest_choice(inst), None)
    assert ev.blocking_energy_j >= -1e-9


@pytest.mark.parametrize(
    "change, match",
    [
        (lambda d: d.update(num_microbatches=2.5), "num_microbatches = 2.5: must be an integer"),
        (lambda d: d.update(num_microbatches=True), "not a boolean"),
        (lambda d: d.update(version=99), "version = 99: unsupported"),
        (lambda d: d.update(version="x"), "version = 'x': unsupported"),
        (lambda d: d.update(num_stages=1000000), "option tables"),
        (lambda d: d.update(num_microbatches=9_000_000), "computations, more than"),
        (lambda d: d.update(name={"a": 1}), "name = {'a': 1}: must be a string"),
        (lambda d: d.update(p_blocking_w=10**400), "is too large"),
        (
            lambda d: d["tables"]["s0/forward"]["sm_clock_mhz"].__setitem__(0, 1410.7),
            "sm_clock_mhz.0. = 1410.7: must be an integer",
        ),
        (lambda d: d["tables"]["s0/forward"]["time_s"].__setitem__(0, "1"), "must be a number"),
        (
            lambda d: d["tables"]["s0/forward"].update(
                sm_clock_mhz=list(range(1, 10_002)),
                time_s=[1.0] * 10_001,
                energy_j=[1.0] * 10_001,
            ),
            "at most 10000|more than 10000",
        ),
    ],
)
def test_strict_schedule_fields(change, match):
    # Issue 13: silent truncation, bools as numbers, unknown versions, absurd sizes.
    data = synthetic_instance(2, 2, 3, seed=0).to_dict()
    change(data)
    with pytest.raises(InstanceError, match=match):
        PemInstance.from_dict(data)


@pytest.mark.parametrize(
    "change, match",
    [
        (lambda d: d.update(edges={}), "edges = {}: must be a list"),
        (lambda d: d["edges"].__setitem__(0, [0.5, 1]), r"edges\[0\]\[0\] = 0.5"),
        (lambda d: d["edges"].__setitem__(0, [0, 1, 2]), "must be a pair"),
        (lambda d: d["computations"][0].update(stage=True), "not a boolean"),
        (lambda d: d["computations"][0].pop("table"), "missing field 'table'"),
    ],
)
def test_strict_explicit_fields(change, match):
    data = random_dag_instance(6, 3, seed=0).to_dict()
    change(data)
    with pytest.raises(InstanceError, match=match):
        PemInstance.from_dict(data)
