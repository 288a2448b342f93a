"""Any trace in the Zeus format (issue 14): GPUs read from the folder, b0 substituted."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd
import pytest

import energyopt
from energyopt.tuning.suites import paper_trace_notes, suite, trace_available
from energyopt.tuning.trace import (
    POWER_COLUMNS,
    TRAIN_COLUMNS,
    TRAIN_OPTIONAL,
    substitute_default_batch_size,
    trace_gpus,
)

ROOT = Path(__file__).resolve().parents[2]


def write_trace(folder: Path) -> None:
    """A made-up GPU "xpu" with one workload of Table 1 (cifar100/shufflenetv2, b0 = 1024).

    Batch sizes 256, 512, 2048 (no 1024), power limits 100 and 150 W. One run of 512
    never reaches the target, so 256 is the largest size below b0 that always does.
    """
    power = [
        ("cifar100", "shufflenetv2", b, "adadelta", p, t, w)
        for b, (t1, t2) in {256: (30.0, 25.0), 512: (20.0, 16.0), 2048: (12.0, 10.0)}.items()
        for p, t, w in ((100, t1, 95.0), (150, t2, 140.0))
    ]
    pd.DataFrame(power, columns=list(POWER_COLUMNS)).to_csv(
        folder / "summary_power_xpu.csv", index=False
    )
    runs = {256: [20, 22], 512: [18, None], 2048: [30, 31]}
    train = [
        ("cifar100", "shufflenetv2", b, "adadelta", 0.6, e, "1e-1", r)
        for b, es in runs.items()
        for r, e in enumerate(es)
    ]
    columns = list(TRAIN_COLUMNS + TRAIN_OPTIONAL)
    pd.DataFrame(train, columns=columns).to_csv(folder / "summary_train.csv", index=False)


def test_gpu_list_is_read_from_the_folder_and_b0_substituted(tmp_path):
    write_trace(tmp_path)
    assert trace_available(tmp_path) and trace_gpus(tmp_path) == ["xpu"]
    (inst,) = suite("paper", data_dir=tmp_path)
    assert inst.gpu == "xpu" and inst.batch_sizes == (256, 512, 2048)
    assert inst.default_batch_size == 256
    notes = paper_trace_notes(tmp_path)
    assert any("default batch size 1024 not in the trace; using 256" in n for n in notes)
    assert any("squad/bert_base_uncased" in n and "left out" in n for n in notes)
    assert energyopt.solve(inst, "default", seed=0).objective is not None


def test_substitution_rule():
    # b0 = 1024: the largest consistent size below it, else the largest below, else above.
    assert substitute_default_batch_size(1024, [256, 512, 2048], [256, 2048])[0] == 256
    assert substitute_default_batch_size(1024, [256, 512, 2048], [2048])[0] == 512
    assert substitute_default_batch_size(1024, [2048, 4096], [2048])[0] == 2048
    assert substitute_default_batch_size(1024, [512, 1024], []) == (1024, "")


def test_tuning_replay_benchmark_runs_on_any_trace(tmp_path, capsys):
    write_trace(tmp_path)
    spec = importlib.util.spec_from_file_location(
        "tuning_replay", ROOT / "benchmarks" / "tuning_replay.py"
    )
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.main(["--seeds", "1", "--data-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "GPUs (one summary_power_<gpu>.csv each): xpu" in out
    assert "note: xpu: cifar100/shufflenetv2: default batch size 1024" in out
    assert "| xpu | cifar100/shufflenetv2 |" in out


@pytest.mark.parametrize("missing", ["summary_train.csv", "summary_power_xpu.csv"])
def test_incomplete_trace_folder_is_not_a_trace(tmp_path, missing):
    write_trace(tmp_path)
    (tmp_path / missing).unlink()
    assert not trace_available(tmp_path)
