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
from energyopt.profiles.readers import read_zeus_monitor_log, read_zeus_power_trace
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


# -- ZeusMonitor logs --------------------------------------------------------------------------
MONITOR_LOG = """start_time,window_name,elapsed_time,gpu0_energy,gpu1_energy
1700000000.0,forward@1410,0.10,20.0,22.0
1700000000.2,backward@1410,0.20,40.0,42.0
1700000001.0,forward@1410,0.12,22.0,24.0
1700000001.2,forward@1005,0.15,18.0,18.0
"""


def test_zeus_monitor_log_averages_windows_and_sums_gpus(tmp_path: Path) -> None:
    path = write(tmp_path, "monitor.csv", MONITOR_LOG)
    df = read_zeus_monitor_log(
        path,
        gpu="NVIDIA A100-SXM4-40GB",
        window_pattern=r"(?P<operation>\w+)@(?P<knob_value>\d+)",
    )
    df = df.set_index(["operation", "knob_value"])
    # forward@1410: two windows, (0.10 + 0.12) / 2 = 0.11 s; energies summed over the two
    # GPUs, (20 + 22) = 42 and (22 + 24) = 46 J, averaged: 44 J
    fwd = df.loc[("forward", 1410.0)]
    assert (fwd.time_s, fwd.energy_j, fwd.samples, fwd.num_gpus) == (
        pytest.approx(0.11),
        pytest.approx(44.0),
        2,
        2,
    )
    assert df.loc[("backward", 1410.0)].energy_j == pytest.approx(82.0)
    assert df.loc[("forward", 1005.0)].time_s == pytest.approx(0.15)
    assert set(df["source"]) == {"zeus-monitor"}


def test_zeus_monitor_log_needs_the_setting_and_matching_names(tmp_path: Path) -> None:
    path = write(tmp_path, "monitor.csv", MONITOR_LOG)
    with pytest.raises(InstanceError, match="exactly one of knob_value and window_pattern"):
        read_zeus_monitor_log(path, gpu="x")
    with pytest.raises(InstanceError, match=r"line 2: window_name = 'forward@1410' does not"):
        read_zeus_monitor_log(path, gpu="x", window_pattern=r"(?P<knob_value>\d+)")
    df = read_zeus_monitor_log(path, gpu="x", knob="power_limit_w", knob_value=300)
    assert sorted(df["operation"]) == ["backward@1410", "forward@1005", "forward@1410"]
    nocol = write(tmp_path, "n.csv", "start_time,window_name,elapsed_time\n0,a,1\n")
    with pytest.raises(InstanceError, match=r"n\.csv: no gpu<i>_energy column"):
        read_zeus_monitor_log(nocol, gpu="x", knob_value=1)


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
