"""Generated hostile variants of a Perseus stage profile and a Zeus trace pair.

The files are written from instances in ``instances/`` (the GPT-3 175B profile behind
the Perseus instances, the ImageNet/ResNet-50 trace behind a tuning instance), so the
suite needs no data outside the repository. Each variant goes through the readers of
the Python API: refused with one line naming the file (and the column or the line
where a cell is bad), or accepted; never another exception.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from fuzzutil import check_message, csv_text, mutate_csv

from energyopt.core.errors import InstanceError
from energyopt.pipeline.readers import (
    instance_from_perseus_profile,
    read_perseus_profile,
    read_perseus_stage_profile,
)
from energyopt.profiles.readers import ZEUS_POWER_COLUMNS, read_zeus_power_trace
from energyopt.tuning.trace import (
    PAPER_WORKLOADS,
    TRAIN_COLUMNS,
    TRAIN_OPTIONAL,
    instance_from_trace,
)

ROOT = Path(__file__).resolve().parents[2]
GPT3 = ROOT / "instances/pipeline/paper/006-gpt3-175b-a100-1f1b-8x12-t1.json"
IMAGENET = ROOT / "instances/tuning/paper/003-imagenet-resnet50.json"
MUTATIONS = 60

PERSEUS_HEADER = ["stage", "instruction", "frequency", "time", "energy"]
_NOT_INT = ["inf", "-inf", "1e400", "nan", "2.5", "True", "x", "", "-1"]
_NOT_NUMBER = ["inf", "-inf", "1e400", "nan", "True", "x", "", "-1"]
PERSEUS_INVALID = {
    "stage": [*_NOT_INT, "99999999999999999999"],
    "frequency": [*_NOT_INT, "1410.7", "0", "99999999999999999999"],
    "instruction": ["sideways", "", "1"],
    "time": _NOT_NUMBER,
    "energy": _NOT_NUMBER,
}
POWER_HEADER = list(ZEUS_POWER_COLUMNS)
POWER_INVALID = {
    "batch_size": [*_NOT_INT, "0"],
    "power_limit": [*_NOT_NUMBER, "0"],
    "time_per_epoch": [*_NOT_NUMBER, "0"],
    "average_power": [*_NOT_NUMBER, "0"],
}
TRAIN_HEADER = [*TRAIN_COLUMNS[:4], "learning_rate", "run", *TRAIN_COLUMNS[4:]]
TRAIN_INVALID = {
    "batch_size": [*_NOT_INT, "0"],
    "target_metric": ["inf", "1e400", "True", "x", "-1", ""],
    "target_epoch": ["2.5", "-1", "0", "True", "x", "inf", "1e400"],
}


def perseus_rows() -> list[list]:
    tables = json.loads(GPT3.read_text())["tables"]
    rows = []
    for name, t in sorted(tables.items()):
        stage, kind = name[1:].split("/")
        for f, s, e in zip(t["sm_clock_mhz"], t["time_s"], t["energy_j"]):
            rows.append([int(stage), kind, f, s, e])
    return rows


def zeus_rows() -> tuple[list[list], list[list]]:
    inst = json.loads(IMAGENET.read_text())
    spec = PAPER_WORKLOADS["imagenet/resnet50"]
    head = [spec.dataset, spec.network]
    power, train = [], []
    for i, b in enumerate(inst["batch_sizes"]):
        for j, p in enumerate(inst["power_limits_w"]):
            t, w = inst["epoch_time_s"][i][j], inst["avg_power_w"][i][j]
            power.append([*head, b, spec.optimizer, p, t, w])
        for run, epoch in enumerate(inst["target_epochs"][i]):
            train.append([*head, b, spec.optimizer, 0.1, run, spec.target_metric, epoch])
    return power, train


def test_the_unmutated_files_are_read(tmp_path):
    path = tmp_path / "gpt3+a100_sxm_bf16.csv"
    path.write_text(csv_text(PERSEUS_HEADER, perseus_rows()))
    inst = instance_from_perseus_profile(path, 12, gpu="a100")
    assert inst.num_stages == 8 and inst.p_blocking_w == 83.64
    power, train = zeus_rows()
    (tmp_path / "p.csv").write_text(csv_text(POWER_HEADER, power))
    (tmp_path / "t.csv").write_text(csv_text(TRAIN_HEADER, train))
    spec = PAPER_WORKLOADS["imagenet/resnet50"]
    tun = instance_from_trace(tmp_path / "p.csv", tmp_path / "t.csv", spec, gpu="v100")
    assert len(tun.batch_sizes) == len(json.loads(IMAGENET.read_text())["batch_sizes"])


def _run(read, path: Path, label: str, must_refuse: bool, fields: set[str]) -> None:
    try:
        read(path)
    except InstanceError as exc:
        check_message(str(exc), str(path), fields | {"line"}, label)
        return
    assert not must_refuse, f"{label}: accepted"


def test_perseus_profile_mutations(tmp_path):
    rng = random.Random("perseus")
    rows = perseus_rows()
    path = tmp_path / "model+a40_bf16.csv"
    readers = [
        read_perseus_profile,
        read_perseus_stage_profile,
        lambda p: instance_from_perseus_profile(p, 4, gpu="a40"),
    ]
    for k in range(MUTATIONS):
        label, text, must_refuse = mutate_csv(PERSEUS_HEADER, rows, PERSEUS_INVALID, rng)
        path.write_bytes(text.encode("utf-8", "surrogateescape"))
        _run(readers[k % 3], path, f"perseus: {label}", must_refuse, set(PERSEUS_HEADER))


def test_zeus_trace_pair_mutations(tmp_path):
    rng = random.Random("zeus")
    power, train = zeus_rows()
    spec = PAPER_WORKLOADS["imagenet/resnet50"]
    ppath, tpath = tmp_path / "summary_power_v100.csv", tmp_path / "summary_train.csv"
    fields = set(POWER_HEADER) | set(TRAIN_HEADER)
    for k in range(MUTATIONS):
        ppath.write_text(csv_text(POWER_HEADER, power))
        tpath.write_text(csv_text(TRAIN_HEADER, train))
        if k % 2:
            label, text, refuse = mutate_csv(
                TRAIN_HEADER, train, TRAIN_INVALID, rng, optional=TRAIN_OPTIONAL
            )
            target = tpath
        else:
            label, text, refuse = mutate_csv(POWER_HEADER, power, POWER_INVALID, rng)
            target = ppath
        target.write_bytes(text.encode("utf-8", "surrogateescape"))
        if k % 4 == 0:
            _run(read_zeus_power_trace, ppath, f"zeus power: {label}", refuse, fields)
        _run(
            lambda p: instance_from_trace(ppath, tpath, spec, gpu="v100"),
            target,
            f"zeus {target.name}: {label}",
            refuse,
            fields,
        )


def test_blocking_power_presets_through_the_instance(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text(csv_text(PERSEUS_HEADER, perseus_rows()))
    assert instance_from_perseus_profile(path, 4, gpu="A100_SXM").p_blocking_w == 83.64
    assert instance_from_perseus_profile(path, 4, gpu="a40", p_blocking_w=60.0).p_blocking_w == 60
    with pytest.raises(InstanceError, match="p_blocking_w = True"):
        instance_from_perseus_profile(path, 4, p_blocking_w=True)


@pytest.mark.parametrize(
    "column, value, match",
    [
        ("knob_value", "1410.7", "knob_value = 1410.7: must be an integer"),
        ("batch_size", "2.5", "batch_size = 2.5: must be an integer"),
        ("samples", "True", "samples = 'True'"),
        ("time_s", "1e400", "time_s = inf: must be finite"),
    ],
)
def test_energyopt_profile_fields_are_strict(tmp_path, column, value, match):
    from energyopt.profiles.schema import read_profile

    path = tmp_path / "p.csv"
    path.write_text(csv_text(PERSEUS_HEADER, perseus_rows()))
    df = read_perseus_stage_profile(path)
    df[column] = df[column].astype(object)
    df.loc[2, column] = value
    df.to_csv(path, index=False)
    with pytest.raises(InstanceError, match=rf"^{path}, row 2: {match}"):
        read_profile(path)
