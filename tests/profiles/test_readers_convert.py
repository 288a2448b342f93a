"""Readers of published formats and converters to PEM option tables and Zeus tables."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from energyopt.core.instance import InstanceError
from energyopt.pipeline.evaluator import evaluate
from energyopt.pipeline.from_profile import to_option_tables, to_pem_instance
from energyopt.pipeline.readers import instance_from_perseus_profile, read_perseus_stage_profile
from energyopt.profiles.collector import sweep
from energyopt.profiles.convert import to_zeus_power_table
from energyopt.profiles.readers import read_zeus_power_trace
from energyopt.profiles.schema import read_profile, write_profile
from energyopt.profiles.simulated import SimulatedGpu

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
needs_data = pytest.mark.skipif(not DATA.exists(), reason="../shared/data not present")

PERSEUS_TINY = """stage,instruction,frequency,time,energy
0,forward,1410,0.010,4.0
0,forward,1005,0.013,3.0
0,backward,1410,0.020,8.0
0,backward,1005,0.026,6.0
1,forward,1410,0.011,4.2
1,forward,1005,0.014,3.1
1,backward,1410,0.021,8.3
1,backward,1005,0.027,6.2
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# -- Perseus ----------------------------------------------------------------------------------
def test_perseus_profile_reads_into_the_schema(tmp_path: Path) -> None:
    path = write(tmp_path, "tiny-model+a100_sxm_bf16.csv", PERSEUS_TINY)
    df = read_perseus_stage_profile(path)
    assert len(df) == 8
    assert set(df["workload"]) == {"tiny-model"} and set(df["gpu"]) == {"a100_sxm_bf16"}
    assert set(df["source"]) == {"perseus-profile"}
    row = df[(df.stage == 1) & (df.operation == "backward") & (df.knob_value == 1005)].iloc[0]
    assert (row.time_s, row.energy_j) == (0.027, 6.2)
    tables = to_option_tables(df)
    assert sorted(tables) == ["s0/backward", "s0/forward", "s1/backward", "s1/forward"]
    assert tables["s0/forward"].sm_clock_mhz == (1410, 1005)  # fastest first
    assert tables["s0/forward"].energy_j == (4.0, 3.0)


def test_perseus_bad_value_names_file_line_and_field(tmp_path: Path) -> None:
    bad = PERSEUS_TINY.replace("0,backward,1005,0.026,6.0", "0,backward,1005,0.026,-6.0")
    path = write(tmp_path, "bad.csv", bad)
    with pytest.raises(InstanceError, match=r"bad\.csv, line 5: energy = -6\.0"):
        read_perseus_stage_profile(path)


@needs_data
def test_published_perseus_profile_gives_the_same_pem_instance() -> None:
    path = DATA / "perseus-sosp24" / "gpt3-175b+a100_sxm_bf16.csv"
    df = read_perseus_stage_profile(path)
    assert len(df) == 608  # 8 stages x 2 instructions x 38 clocks (1410 down to 855)
    ours = to_pem_instance(df, 12, p_blocking_w=83.64)
    ref = instance_from_perseus_profile(path, 12, p_blocking_w=83.64)
    assert dict(ours.tables) == dict(ref.tables)
    assert ours.edges == ref.edges and ours.source == "perseus-profile"


# -- Zeus trace -------------------------------------------------------------------------------
ZEUS_TINY = """dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power
cifar100,shufflenetv2,1024,adadelta,100,27.13,106.9
cifar100,shufflenetv2,1024,adadelta,125,16.85,119.0
imagenet,resnet50,256,adam,100,3000.0,95.5
"""


def test_zeus_trace_round_trips_through_the_profile(tmp_path: Path) -> None:
    path = write(tmp_path, "summary_power_a40.csv", ZEUS_TINY)
    df = read_zeus_power_trace(path)
    assert set(df["gpu"]) == {"a40"} and set(df["knob"]) == {"power_limit_w"}
    assert df["workload"].tolist() == ["cifar100/shufflenetv2"] * 2 + ["imagenet/resnet50"]
    # energy per epoch = average_power x time_per_epoch = 106.9 x 27.13 = 2900.197 J
    assert df["energy_j"].iloc[0] == pytest.approx(2900.197)
    back = to_zeus_power_table(df)
    orig = pd.read_csv(path)
    pd.testing.assert_frame_equal(back, orig, check_exact=False, rtol=1e-12)


def test_zeus_trace_errors_name_file_line_field(tmp_path: Path) -> None:
    path = write(tmp_path, "t.csv", ZEUS_TINY.replace("16.85", "abc"))
    with pytest.raises(InstanceError, match=r"t\.csv, line 3: time_per_epoch = 'abc'"):
        read_zeus_power_trace(path)
    path = write(tmp_path, "u.csv", "dataset,network\nx,y\n")
    with pytest.raises(InstanceError, match=r"u\.csv: missing column\(s\) batch_size"):
        read_zeus_power_trace(path)
    dup = ZEUS_TINY + "cifar100,shufflenetv2,1024,adadelta,125,16.0,118.0\n"
    with pytest.raises(InstanceError, match=r"line 5.*repeats"):
        read_zeus_power_trace(write(tmp_path, "d.csv", dup))


@needs_data
@pytest.mark.parametrize("gpu, rows", [("v100", 476), ("a40", 453)])
def test_published_zeus_traces_round_trip(gpu: str, rows: int) -> None:
    path = DATA / "zeus-nsdi23" / f"summary_power_{gpu}.csv"
    df = read_zeus_power_trace(path)
    assert len(df) == rows
    back = to_zeus_power_table(df)
    orig = pd.read_csv(path)
    pd.testing.assert_frame_equal(back, orig, check_exact=False, rtol=1e-12)


def test_zeus_table_from_an_iteration_profile_needs_iterations_per_epoch() -> None:
    gpu = SimulatedGpu("v100", noise=0.0)
    df = sweep(gpu, gpu.steps("matmul"), "power_limit_w", [250.0, 150.0], iterations=2)
    df["workload"] = "cifar100/matmul"
    with pytest.raises(InstanceError, match="iterations_per_epoch"):
        to_zeus_power_table(df)
    table = to_zeus_power_table(df, iterations_per_epoch=100, optimizer="sgd")
    assert table.columns.tolist() == [
        "dataset",
        "network",
        "batch_size",
        "optimizer",
        "power_limit",
        "time_per_epoch",
        "average_power",
    ]
    # one epoch = 100 iterations: time scales, average power does not
    assert table["time_per_epoch"].tolist() == pytest.approx((df["time_s"] * 100).tolist())
    assert table["average_power"].tolist() == pytest.approx(df["power_w"].tolist())
    assert table["power_limit"].tolist() == [250, 150]
    assert set(table["optimizer"]) == {"sgd"} and set(table["dataset"]) == {"cifar100"}
    assert table.attrs["source"] == "simulated"


# -- simulated profile -> PEM instance -------------------------------------------------------
def simulated_pipeline_profile(stages: int = 2) -> pd.DataFrame:
    gpu = SimulatedGpu("a100", seed=0)
    parts = []
    for s in range(stages):
        parts.append(
            sweep(
                gpu,
                gpu.steps("transformer-layer"),
                "sm_clock_mhz",
                [1410, 1200, 1005, 810],
                workload="layer",
                stage=s,
                iterations=3,
            )
        )
    return pd.concat(parts, ignore_index=True)


def test_pem_instance_from_a_simulated_profile_is_labelled_and_evaluable() -> None:
    df = simulated_pipeline_profile(2)
    inst = to_pem_instance(df, 4, p_blocking_w=60.0)
    assert inst.num_stages == 2 and inst.num_microbatches == 4
    assert inst.source == "simulated"
    assert len(inst.computations) == 2 * 4 * 2  # stages x microbatches x (fwd, bwd)
    assert all(len(t) == 4 for t in inst.tables.values())
    # all computations at their fastest option: the evaluator accepts the choice
    fastest = tuple(0 for _ in inst.computations)
    ev = evaluate(inst, fastest)
    assert ev.iteration_time_s > 0 and ev.energy_j > 0


def test_single_gpu_profile_replicated_onto_stages_and_mixing_rejected() -> None:
    gpu = SimulatedGpu("a100", seed=0)
    df = sweep(gpu, gpu.steps("transformer-layer"), "sm_clock_mhz", [1410, 900], iterations=2)
    inst = to_pem_instance(df, 3, p_blocking_w=60.0, num_stages=4)
    assert inst.num_stages == 4
    assert inst.tables["s3/forward"] == inst.tables["s0/forward"]
    other = df.assign(workload="other")
    with pytest.raises(InstanceError, match="mixes workload values"):
        to_option_tables(pd.concat([df, other], ignore_index=True))
    tables = to_option_tables(pd.concat([df, other], ignore_index=True), workload="other")
    assert sorted(tables) == ["s0/backward", "s0/forward"]
    with pytest.raises(InstanceError, match="no sm_clock_mhz rows"):
        to_option_tables(df.assign(knob="power_limit_w"))
    with pytest.raises(InstanceError, match="appears more than once"):
        to_option_tables(pd.concat([df, df], ignore_index=True))
    only_fwd = df[df.operation == "forward"]
    with pytest.raises(InstanceError, match="no 'backward'"):
        to_pem_instance(only_fwd, 2, p_blocking_w=60.0)


def test_profile_file_round_trip_keeps_metadata(tmp_path: Path) -> None:
    gpu = SimulatedGpu("a100", seed=0)
    df = sweep(gpu, gpu.steps("matmul"), "sm_clock_mhz", [1410, 900], iterations=2)
    path = write_profile(df, tmp_path / "p.csv")
    back = read_profile(path)
    pd.testing.assert_frame_equal(back, df, check_dtype=False)
    assert back.attrs["source"] == "simulated"
    assert back.attrs["gpu"] == "NVIDIA A100-SXM4-40GB"
    assert back.attrs["energy_method"] == "energy-counter"
    assert "collected_at" in back.attrs


def test_old_conversion_paths_are_gone():
    """Conversion to a family's instance lives in that family only (no alias in profiles)."""
    import energyopt.profiles as profiles
    import energyopt.profiles.convert as convert
    import energyopt.profiles.readers as readers

    for module, name in [
        (profiles, "to_pem_instance"),
        (convert, "to_option_tables"),
        (readers, "read_perseus_stage_profile"),
    ]:
        with pytest.raises(AttributeError):
            getattr(module, name)


def test_zeus_trace_stops_at_the_first_repeated_row(tmp_path: Path) -> None:
    # Issue 27: 200k rows took 27 s before a duplicate on line 3 was reported. Now the
    # reader stops there: only the rows before it are converted.
    import resource

    head = "dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power\n"
    row = "cifar100,shufflenetv2,{b},adadelta,100,10.0,90.0\n"
    rows = [row.format(b=1), row.format(b=1)] + [row.format(b=b) for b in range(2, 50_000)]
    path = write(tmp_path, "summary_power_x.csv", head + "".join(rows))
    usage = resource.getrusage(resource.RUSAGE_SELF)
    before = usage.ru_utime + usage.ru_stime
    with pytest.raises(InstanceError, match=r"line 3: .* repeats an earlier row"):
        read_zeus_power_trace(path)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    assert usage.ru_utime + usage.ru_stime - before < 3.0


def test_profile_row_cap_is_checked_before_parsing(tmp_path: Path) -> None:
    from energyopt.profiles.schema import MAX_PROFILE_ROWS

    head = "gpu,knob,knob_value,workload,operation,batch_size,time_s,energy_j,samples,source\n"
    row = "A100,sm_clock_mhz,1410,w,forward,0,0.1,10,1,nvml\n"
    path = write(tmp_path, "p.csv", head + row * (MAX_PROFILE_ROWS + 1))
    with pytest.raises(InstanceError, match=f"more than {MAX_PROFILE_ROWS} rows"):
        read_profile(path)


def test_write_profile_leaves_no_partial_file(tmp_path: Path, monkeypatch) -> None:
    import errno
    import os

    from energyopt.core.errors import OutputPathError

    df = read_perseus_stage_profile(write(tmp_path, "m+a40_bf16.csv", PERSEUS_TINY))

    def full_disk(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    out = tmp_path / "out.csv"
    with pytest.raises(OutputPathError, match=r"out\.csv: cannot write the profile: No space"):
        write_profile(df, out)
    assert not out.exists()


def test_parquet_profile_size_is_checked_from_its_footer(tmp_path: Path) -> None:
    # 100,001 rows compress to ~10 kB: the footer's row count is checked before decoding.
    pytest.importorskip("pyarrow")
    from energyopt.profiles.schema import MAX_PROFILE_ROWS

    n = MAX_PROFILE_ROWS + 1
    df = pd.DataFrame({"gpu": ["A"] * n, "knob": "sm_clock_mhz", "knob_value": 1410,
                       "workload": "w", "operation": "f", "batch_size": 0, "time_s": 0.1,
                       "energy_j": 1.0, "samples": 1, "source": "nvml"})  # fmt: skip
    path = tmp_path / "big.parquet"
    df.to_parquet(path)
    with pytest.raises(InstanceError, match=f"{n} rows x 10 columns, more than a profile"):
        read_profile(path)
    (tmp_path / "junk.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(InstanceError, match=r"junk\.parquet: cannot read profile"):
        read_profile(tmp_path / "junk.parquet")
