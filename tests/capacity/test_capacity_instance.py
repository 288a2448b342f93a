"""Capacity instance: JSON round trip, content hash, clear errors on bad input."""

from __future__ import annotations

import json

import pytest

from energyopt.capacity import CapacityInstance, Job, Node
from energyopt.capacity.generators import random_point
from energyopt.core.instance import InstanceError, load_instance

from .conftest import keep_or_move


def test_json_round_trip(tmp_path):
    inst = random_point(7, num_nodes=3, num_jobs=5)
    path = tmp_path / "point.json"
    inst.to_json(path)
    back = CapacityInstance.from_json(path)
    assert back == inst
    assert back.instance_id == inst.instance_id
    assert load_instance(path) == inst
    assert back.jobs[0].epoch_time_s == inst.jobs[0].epoch_time_s
    # Derived data survive the trip too.
    assert back.configurations == inst.configurations


def test_round_trip_keeps_running_jobs_and_flags():
    inst = keep_or_move(restart_from_checkpoint=False).with_variant(False)
    back = CapacityInstance.from_json(inst.to_json())
    assert back.jobs[0].running == (0, 1)
    assert back.restart_from_checkpoint is False and back.work_conserving is False
    assert back.instance_id == inst.instance_id
    assert back.instance_id != keep_or_move().instance_id


def test_remaining_time_keeps_progress_only_in_place():
    inst = keep_or_move()
    # 1.5 epochs of 100 s where it runs; restart from the checkpoint (2 epochs) elsewhere.
    assert inst.remaining_time_s(0, 0, 1) == pytest.approx(150.0)
    assert inst.remaining_time_s(0, 1, 1) == pytest.approx(200.0)
    assert inst.min_time_s[0] == pytest.approx(150.0)
    assert inst.min_restart_time_s[0] == pytest.approx(200.0)
    free = keep_or_move(restart_from_checkpoint=False)
    assert free.remaining_time_s(0, 1, 1) == pytest.approx(150.0)


def _data():
    return json.loads(random_point(3, num_nodes=2, num_jobs=3).to_json())


@pytest.mark.parametrize(
    "edit, words",
    [
        (lambda d: d["nodes"][0].update(num_gpus=0), ["nodes[0].num_gpus", "0"]),
        (lambda d: d["nodes"][0].update(num_gpus=1.5), ["nodes[0].num_gpus", "1.5"]),
        (lambda d: d["nodes"][1].update(idle_power_w=-5), ["nodes[1].idle_power_w", "-5"]),
        (lambda d: d["nodes"][0].pop("gpu_type"), ["nodes[0]", "gpu_type"]),
        (lambda d: d["jobs"][1].update(due_s="soon"), ["jobs[1].due_s", "soon"]),
        (lambda d: d["jobs"][0].update(remaining_epochs=0), ["jobs[0].remaining_epochs", "0"]),
        (
            lambda d: d["jobs"][2].update(tardiness_weight_eur_per_s=float("nan")),
            ["jobs[2].tardiness_weight_eur_per_s", "nan"],
        ),
        (lambda d: d["jobs"][0].update(running=[9, 1]), ["jobs[0].running", "[9, 1]"]),
        (lambda d: d["jobs"][0].update(epoch_time_s={"A100": [1.0]}), ["jobs[0].epoch_time_s"]),
        (lambda d: d.update(pue=-1), ["pue", "-1"]),
        (lambda d: d.update(work_conserving="yes"), ["work_conserving", "yes"]),
        (lambda d: d.update(jobs=[]), ["jobs"]),
        (lambda d: d.pop("nodes"), ["nodes"]),
    ],
)
def test_bad_fields_are_named(edit, words, tmp_path):
    data = _data()
    edit(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InstanceError) as err:
        load_instance(path)
    msg = str(err.value)
    assert str(path) in msg
    for w in words:
        assert w in msg, msg


def test_short_epoch_table_and_overfull_node():
    node = Node("v", "V100", 2, 100.0, 200.0)
    with pytest.raises(InstanceError, match=r"jobs\[0\]\.epoch_time_s\['V100'\].*1\.\.2"):
        CapacityInstance((node,), (Job("a", 0, 10, 1e-3, 1.0, {"V100": (5.0,)}),))
    table = {"V100": (5.0, 3.0)}
    with pytest.raises(InstanceError, match=r"nodes\[0\].*3 GPUs of 2"):
        CapacityInstance(
            (node,),
            (
                Job("a", 0, 10, 1e-3, 1.0, table, running=(0, 2)),
                Job("b", 0, 10, 1e-3, 1.0, table, running=(0, 1)),
            ),
        )


def test_not_a_capacity_file(tmp_path):
    path = tmp_path / "x.json"
    path.write_text('{"family": "capacity", "version": 1, "nodes": "many"}')
    with pytest.raises(InstanceError, match="nodes"):
        CapacityInstance.from_json(path)


@pytest.mark.parametrize(
    "change, match",
    [
        (lambda d: d.update(pue=0), "pue = 0"),
        (lambda d: d.update(version=99), "version = 99: unsupported"),
        (lambda d: d["nodes"][1].update(name=d["nodes"][0]["name"]), "appears more than once"),
        (lambda d: d["jobs"][0].update(name={"x": 1}), "must be a string"),
    ],
)
def test_strict_fields(change, match):
    # Issue 13: silently accepted before.
    import json
    from pathlib import Path

    from energyopt.capacity.instance import CapacityInstance
    from energyopt.core.instance import InstanceError

    root = Path(__file__).resolve().parents[2]
    path = sorted((root / "instances" / "capacity" / "smoke").glob("*.json"))[0]
    data = json.loads(path.read_text())
    change(data)
    with pytest.raises(InstanceError, match=match):
        CapacityInstance.from_dict(data)


def test_a_job_may_not_arrive_after_the_rescheduling_point():
    # Issue 27: a job in the system at now_s must have arrived by then.
    data = random_point(7, num_nodes=3, num_jobs=5).to_dict()
    data["now_s"] = 100.0
    for job in data["jobs"]:
        job["arrival_s"] = min(job["arrival_s"], 100.0)
    assert CapacityInstance.from_dict(data).now_s == 100.0  # arrival == now_s is fine
    data["jobs"][2]["arrival_s"] = 100.5
    with pytest.raises(InstanceError, match=r"jobs\[2\]\.arrival_s = 100\.5: after the "):
        CapacityInstance.from_dict(data)
