"""Zeus trace readers: malformed files, documented skipping, the shared trace, suites."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import energyopt
from energyopt.core.instance import InstanceError
from energyopt.core.status import TerminationReason
from energyopt.tuning import (
    PAPER_WORKLOADS,
    WorkloadSpec,
    instance_from_trace,
    read_power_trace,
    read_train_trace,
)
from energyopt.tuning.suites import suite

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "zeus-nsdi23"
needs_data = pytest.mark.skipif(
    not (DATA / "summary_train.csv").exists(), reason="Zeus trace (../shared/data) not present"
)

POWER = """dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power
toy,net,16,adam,100,20,95
toy,net,16,adam,200,12,150
toy,net,32,adam,100,10,100
toy,net,32,adam,200,8,190
"""
TRAIN = """dataset,network,batch_size,optimizer,learning_rate,run,target_metric,target_epoch
toy,net,16,adam,0.1,1,0.5,4
toy,net,16,adam,0.1,2,0.5,6
toy,net,32,adam,0.1,1,0.5,8
toy,net,32,adam,0.1,2,0.5,
toy,net,32,adam,0.1,1,0.7,20
"""
SPEC = WorkloadSpec("toy", "net", "adam", 0.5, 32, 40)


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_toy_trace_builds_instance(tmp_path):
    inst = instance_from_trace(
        _write(tmp_path, "summary_power_toy.csv", POWER),
        _write(tmp_path, "summary_train.csv", TRAIN),
        SPEC,
        gpu="toy",
    )
    assert inst.batch_sizes == (16, 32) and inst.power_limits_w == (100.0, 200.0)
    # NaN target_epoch is kept as a run that never reaches the target (documented).
    assert inst.target_epochs == ((4, 6), (8, None))
    assert inst.epoch_time_s[1] == (10.0, 8.0) and inst.avg_power_w[0] == (95.0, 150.0)
    assert inst.recurrences == 8 and inst.max_power_w == 200.0
    assert inst.source["power_trace"] == "summary_power_toy.csv"


def test_dataframe_input_same_as_file(tmp_path):
    from io import StringIO

    a = instance_from_trace(
        pd.read_csv(StringIO(POWER)), pd.read_csv(StringIO(TRAIN)), SPEC, gpu="toy"
    )
    b = instance_from_trace(
        _write(tmp_path, "p.csv", POWER), _write(tmp_path, "t.csv", TRAIN), SPEC, gpu="toy"
    )
    assert a.epoch_time_s == b.epoch_time_s and a.target_epochs == b.target_epochs


def test_missing_column_named(tmp_path):
    from io import StringIO

    path = tmp_path / "p.csv"
    pd.read_csv(StringIO(POWER)).drop(columns="average_power").to_csv(path, index=False)
    with pytest.raises(InstanceError, match=r"p\.csv: missing column\(s\) average_power"):
        read_power_trace(path)
    with pytest.raises(InstanceError, match="target_epoch"):
        read_train_trace(pd.DataFrame({"dataset": ["x"], "network": ["y"]}))


def test_negative_time_named_with_line(tmp_path):
    bad = POWER.replace("toy,net,16,adam,200,12,150", "toy,net,16,adam,200,-12,150")
    with pytest.raises(
        InstanceError, match=r"p\.csv, line 3: time_per_epoch = -12(\.0)?: must be > 0"
    ):
        read_power_trace(_write(tmp_path, "p.csv", bad))


@pytest.mark.parametrize(
    ("old", "new", "match"),
    [
        ("toy,net,32,adam,100,10,100", "toy,net,32,adam,100,10,abc", "average_power = 'abc'"),
        ("toy,net,32,adam,100,10,100", "toy,net,32,adam,100,,100", "time_per_epoch.*missing"),
        ("toy,net,32,adam,100,10,100", "toy,net,32.5,adam,100,10,100", "batch_size.*integer"),
        ("toy,net,32,adam,100,10,100", "toy,net,32,adam,inf,10,100", "power_limit.*finite"),
    ],
)
def test_bad_power_values(tmp_path, old, new, match):
    with pytest.raises(InstanceError, match=match):
        read_power_trace(_write(tmp_path, "p.csv", POWER.replace(old, new)))


def test_bad_train_values(tmp_path):
    nan_target = TRAIN.replace("0.1,1,0.5,4", "0.1,1,,4")
    with pytest.raises(InstanceError, match=r"line 2: target_metric.*missing"):
        read_train_trace(_write(tmp_path, "t.csv", nan_target))
    neg = TRAIN.replace("0.1,1,0.5,4", "0.1,1,0.5,-4")
    with pytest.raises(InstanceError, match=r"line 2: target_epoch = -4(\.0)?: must be > 0"):
        read_train_trace(_write(tmp_path, "t.csv", neg))
    with pytest.raises(InstanceError, match="cannot read"):
        read_train_trace(tmp_path / "absent.csv")


def test_documented_skipping(tmp_path):
    # b64 only in the power trace, and with one power limit only -> left out, recorded.
    power = POWER + "toy,net,64,adam,100,5,120\n"
    inst = instance_from_trace(
        _write(tmp_path, "p.csv", power), _write(tmp_path, "t.csv", TRAIN), SPEC, gpu="toy"
    )
    assert inst.batch_sizes == (16, 32)
    assert any("64" in s for s in inst.source["skipped"])


def test_unknown_workload_named(tmp_path):
    spec = WorkloadSpec("nope", "net", "adam", 0.5, 32, 40)
    with pytest.raises(InstanceError, match="dataset='nope'"):
        instance_from_trace(
            _write(tmp_path, "p.csv", POWER), _write(tmp_path, "t.csv", TRAIN), spec, gpu="toy"
        )


@needs_data
def test_shared_trace_workloads():
    v100 = {i.name: i for i in suite("paper") if i.gpu == "v100"}
    a40 = {i.name: i for i in suite("paper") if i.gpu == "a40"}
    assert set(v100) == set(a40) == set(PAPER_WORKLOADS)
    ls = v100["librispeech/deepspeech2"]
    assert (len(ls.batch_sizes), len(ls.power_limits_w), ls.default_batch_size) == (15, 7, 192)
    assert ls.recurrences == 2 * 15 * 7 and ls.max_power_w == 250.0
    assert a40["librispeech/deepspeech2"].power_limits_w[-1] == 300.0
    # First V100 row of the file: cifar100 b1024 adadelta 100 W, 11.2767 s, 86.86 W.
    cf = v100["cifar100/shufflenetv2"]
    i, j = cf.index_of_batch(1024), cf.index_of_power(100)
    assert cf.epoch_time_s[i][j] == pytest.approx(11.276666666666666)
    assert cf.avg_power_w[i][j] == pytest.approx(86.86460850784009)
    # movielens b4 never reaches NDCG 0.41 in any run (NaN in the trace).
    ml = v100["movielens-1m/ncf"]
    assert all(e is None for e in ml.target_epochs[ml.index_of_batch(4)])


def test_smoke_suite_all_methods():
    insts = suite("smoke")
    assert insts
    for inst in insts:
        for name in energyopt.methods("tuning"):
            r = energyopt.solve(inst, name, seed=0)
            assert r.termination in (TerminationReason.OPTIMAL, TerminationReason.COMPLETED)
            assert r.objective is not None and r.bound is not None
    with pytest.raises(ValueError, match="unknown suite"):
        suite("huge")


def test_paper_suite_falls_back_without_data(tmp_path):
    insts = suite("paper", data_dir=tmp_path)
    assert len(insts) == 6 and all("generated" in i.source["kind"] for i in insts)


def test_reads_the_profiles_converter_output():
    convert = pytest.importorskip("energyopt.profiles.convert")
    cols = [
        "gpu", "knob", "knob_value", "workload", "operation", "batch_size",
        "time_s", "energy_j", "samples", "source",
    ]  # fmt: skip
    rows = [
        ("sim", "power_limit_w", p, "toy/net", "epoch", b, t, t * w, 1, "simulated (test)")
        for b, t0 in ((16, 20.0), (32, 10.0))
        for p, t, w in ((100.0, t0, 95.0), (200.0, t0 * 0.6, 150.0))
    ]
    table = convert.to_zeus_power_table(pd.DataFrame(rows, columns=cols), optimizer="adam")
    from io import StringIO

    inst = instance_from_trace(table, pd.read_csv(StringIO(TRAIN)), SPEC, gpu="sim")
    assert inst.epoch_time_s == ((20.0, 12.0), (10.0, 6.0))
    assert inst.avg_power_w[0] == (pytest.approx(95.0), pytest.approx(150.0))


def test_a_truncated_train_row_is_an_error_not_a_failed_run(tmp_path):
    # Issue 27: pandas filled the missing target_epoch with NaN, a "never reached" run.
    lines = TRAIN.splitlines()
    text = "\n".join([*lines[:3], lines[3].rsplit(",", 1)[0], *lines[4:]]) + "\n"
    path = _write(tmp_path, "summary_train.csv", text)
    with pytest.raises(InstanceError, match=r"summary_train\.csv, line 4: 7 fields, the header"):
        read_train_trace(path)
    # An empty last field is the trace's own way of writing "never reached": still read.
    assert read_train_trace(_write(tmp_path, "ok.csv", TRAIN)).target_epoch.isna().sum() == 1
