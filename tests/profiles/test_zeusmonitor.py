"""ZeusMonitor logs: Zeus's JIT power-limit windows, 1 to N GPUs, any letter case."""

from __future__ import annotations

from pathlib import Path

import pytest

from energyopt.core.instance import InstanceError
from energyopt.profiles import read_zeus_monitor_log

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "zeus-monitor-profiles"
REPRO = Path(__file__).resolve().parents[2] / ".." / "shared" / "repro"
HEADER = "start_time,window_name,elapsed_time"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def jit_log(limits: list[int], gpus: int = 2, energy_header: str = "gpu{i}_energy") -> str:
    cols = ",".join(energy_header.format(i=i) for i in range(gpus))
    lines = [f"{HEADER},{cols}"]
    for k, w in enumerate(limits):
        energies = ",".join(str(10.0 * w + i) for i in range(gpus))
        lines.append(f"{100.0 + k},__GlobalPowerLimitOptimizer_{w},{2.0 + k},{energies}")
    return "\n".join(lines) + "\n"


def test_jit_windows_need_no_pattern_and_sum_the_gpus(tmp_path: Path) -> None:
    path = write(tmp_path, "H100+llama+gpu0,1,2.csv", jit_log([300, 250, 200], gpus=3))
    df = read_zeus_monitor_log(path)
    assert list(df["knob_value"]) == [300.0, 250.0, 200.0]  # file order kept
    assert set(df["knob"]) == {"power_limit_w"}
    # 300 W: 3000 + 3001 + 3002 = 9003 J over the three GPUs, in 2.0 s
    assert df.iloc[0].energy_j == pytest.approx(9003.0)
    assert df.iloc[0].time_s == pytest.approx(2.0)
    assert (df.attrs["gpu"], df.iloc[0].workload, df.attrs["num_gpus"]) == ("H100", "llama", 3)


def test_later_zeus_window_name_and_other_windows(tmp_path: Path) -> None:
    text = jit_log([200, 150]).replace("GlobalPowerLimit", "PowerLimit")
    text += "200.0,epoch,50.0,1.0,1.0\n"
    df = read_zeus_monitor_log(write(tmp_path, "log.csv", text))
    assert list(df["knob_value"]) == [200.0, 150.0]
    assert df.attrs["other_windows"] == 1
    assert (df.attrs["gpu"], df.iloc[0].workload) == ("unknown", "custom")


def test_upper_case_energy_column_counts(tmp_path: Path) -> None:
    path = write(tmp_path, "log.csv", jit_log([300, 200], energy_header="GPU{i}_ENERGY"))
    # 300 W: 3000 + 3001 J, both columns counted
    assert read_zeus_monitor_log(path).iloc[0].energy_j == pytest.approx(6001.0)


@pytest.mark.skipif(not (REPRO / "zeusmonitor-GPU1_ENERGY.csv").exists(), reason="no repro")
def test_repro_gpu1_energy_is_in_the_total() -> None:
    df = read_zeus_monitor_log(
        REPRO / "zeusmonitor-GPU1_ENERGY.csv",
        gpu="x",
        window_pattern=r"(?P<operation>\w+)@(?P<knob_value>\d+)",
    )
    fwd = df.set_index(["operation", "knob_value"]).loc[("forward", 1410.0)]
    # three forward@1410 windows of gpu0 3.0 J + GPU1 2.5 J each: 5.5 J, not 3.0
    assert (fwd.energy_j, fwd.num_gpus, fwd.samples) == (pytest.approx(5.5), 2, 3)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (jit_log([300, 250, 300]), r"line 4: .*second window for 300 W \(the first is on line 2"),
        (jit_log([300, 275, 225, 200]), r"no window for 250 W"),
        (jit_log([300, 250]).replace(",2.0,", ",abc,"), r"line 2: elapsed_time = 'abc'"),
        (jit_log([300, 250]).replace(",2.0,", ",-2.0,"), r"line 2: elapsed_time = -2.0"),
        (jit_log([300, 250]).replace("3000.0", "nan"), r"line 2: gpu0_energy = nan"),
        (jit_log([300]).replace("_300", "_300.5"), r"line 2: window_name = .*whole number"),
        (jit_log([300]).replace("_300", "_0"), r"line 2: window_name = .*whole number"),
        (f"{HEADER},gpu0_energy,GPU0_ENERGY\n0,__GlobalPowerLimitOptimizer_1,1,1,1\n", "both"),
        (
            f"{HEADER},cpu0_energy\n0,__GlobalPowerLimitOptimizer_1,1,1\n",
            "missing column gpu<i>_energy",
        ),
        (f"{HEADER},gpu0_energy\n0,epoch,1,1\n", "no __GlobalPowerLimitOptimizer_<watts>"),
        ("start_time,elapsed_time,gpu0_energy\n0,1,1\n", "missing column.*window_name"),
    ],
)
def test_bad_logs_are_one_line_errors(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, "bad.csv", text)
    with pytest.raises(InstanceError, match=message) as err:
        read_zeus_monitor_log(path)
    assert "\n" not in str(err.value) and "bad.csv" in str(err.value)


def test_knob_other_than_power_limit_needs_a_pattern(tmp_path: Path) -> None:
    path = write(tmp_path, "log.csv", jit_log([300, 200]))
    with pytest.raises(InstanceError, match="JIT windows set the power limit"):
        read_zeus_monitor_log(path, knob="sm_clock_mhz")
    with pytest.raises(InstanceError, match="not both"):
        read_zeus_monitor_log(path, knob_value=1, window_pattern=r"(?P<knob_value>\d+)")
    with pytest.raises(InstanceError, match="needs a named group"):
        read_zeus_monitor_log(path, window_pattern=r"\d+")
    with pytest.raises(InstanceError, match="knob_value = True"):
        read_zeus_monitor_log(path, knob_value=True)
    with pytest.raises(InstanceError, match=r"batch_size = 2\.5"):
        read_zeus_monitor_log(path, batch_size=2.5)


MONITOR_LOG = """start_time,window_name,elapsed_time,gpu0_energy,gpu1_energy
1700000000.0,forward@1410,0.10,20.0,22.0
1700000000.2,backward@1410,0.20,40.0,42.0
1700000001.0,forward@1410,0.12,22.0,24.0
1700000001.2,forward@1005,0.15,18.0,18.0
"""


def test_named_windows_are_averaged(tmp_path: Path) -> None:
    path = write(tmp_path, "monitor.csv", MONITOR_LOG)
    df = read_zeus_monitor_log(
        path, gpu="A100", window_pattern=r"(?P<operation>\w+)@(?P<knob_value>\d+)"
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
    with pytest.raises(InstanceError, match=r"line 2: window_name = 'forward@1410' does not"):
        read_zeus_monitor_log(path, gpu="x", window_pattern=r"(?P<knob_value>\d+)")
    one = read_zeus_monitor_log(path, gpu="x", knob="power_limit_w", knob_value=300)
    assert sorted(one["operation"]) == ["backward@1410", "forward@1005", "forward@1410"]


@pytest.mark.skipif(not DATA.exists(), reason="../shared/data absent")
def test_the_six_published_profiles() -> None:
    files = sorted(DATA.glob("*.csv"))
    assert len(files) == 6
    for f in files:
        df = read_zeus_monitor_log(f)
        gpus = f.stem.rsplit("+gpu", 1)[1].count(",") + 1
        assert df.attrs["num_gpus"] == gpus and df.attrs["gpu"] == "A40"
        assert list(df["knob_value"]) == [300.0 - 25 * k for k in range(9)]
