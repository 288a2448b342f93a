"""``energyopt profile`` on the simulated GPU and on the fake NVML."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest

from energyopt.cli import main
from energyopt.profiles import nvml as nvml_module
from energyopt.profiles.fake_nvml import NVML_ERROR_NO_PERMISSION, FakeGpu, FakeNvml
from energyopt.profiles.schema import read_profile

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"


def test_simulated_clock_sweep_writes_a_labelled_profile(tmp_path: Path, capsys) -> None:
    out = tmp_path / "sim.csv"
    rc = main(
        [
            "profile",
            "--device",
            "simulated:a100",
            "--workload",
            "transformer-layer",
            "--clock-count",
            "4",
            "--iterations",
            "5",
            "--out",
            str(out),
        ]
    )
    assert rc == 0
    df = read_profile(out)
    assert len(df) == 8 and set(df["source"]) == {"simulated"}
    # 4 of the 81 clocks, evenly by index: round(k * 80 / 3) = 0, 27, 53, 80
    # -> 1410, 1410 - 27 * 15 = 1005, 1410 - 53 * 15 = 615, 210 MHz
    assert sorted(set(df["knob_value"])) == [210, 615, 1005, 1410]
    meta = json.loads(Path(str(out) + ".meta.json").read_text())
    assert meta["source"] == "simulated" and meta["driver_version"] == "simulated"
    assert "collected_at" in meta and meta["gpu"] == "NVIDIA A100-SXM4-40GB"
    assert "source = simulated" in capsys.readouterr().err


def test_simulated_gpu_without_counter_states_the_sampling_period(tmp_path: Path, capsys) -> None:
    out = tmp_path / "pl.csv"
    args = ["profile", "--device", "simulated:v100", "--knob", "power_limit_w"]
    args += ["--power-step", "50", "--no-energy-counter", "--sampling-period", "0.02"]
    args += ["--seconds", "0.5", "--out", str(out)]
    assert main(args) == 0
    assert "energy measured by power-sampling, sampling period 0.02 s" in capsys.readouterr().err
    meta = json.loads(Path(str(out) + ".meta.json").read_text())
    assert meta["sampling_period_s"] == 0.02
    assert read_profile(out)["knob_value"].tolist() == [250.0, 200.0, 150.0, 100.0]


def test_permission_error_is_one_line_on_stderr(monkeypatch, capsys) -> None:
    fake = FakeNvml([FakeGpu()])
    fake.inject("nvmlDeviceSetGpuLockedClocks", NVML_ERROR_NO_PERMISSION)
    monkeypatch.setattr(nvml_module, "load_pynvml", lambda: fake)
    user_module = types.ModuleType("energyopt_test_step")
    user_module.step = lambda: None
    monkeypatch.setitem(sys.modules, "energyopt_test_step", user_module)
    rc = main(["profile", "--device", "nvml:0", "--workload", "energyopt_test_step:step"])
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert len(err.splitlines()) == 1
    assert "NVML_ERROR_NO_PERMISSION" in err and "root" in err
    assert fake.gpus[0].locked_clocks_mhz is None  # restored even so


def test_list_devices_reports_mig(monkeypatch, capsys) -> None:
    fake = FakeNvml([FakeGpu(), FakeGpu(name="NVIDIA A100-SXM4-80GB", mig_mode=1)])
    monkeypatch.setattr(nvml_module, "load_pynvml", lambda: fake)
    assert main(["profile", "--list-devices"]) == 0
    out = capsys.readouterr().out
    assert "GPU 0: NVIDIA A100-SXM4-40GB [nvml]" in out
    assert "GPU 1: NVIDIA A100-SXM4-80GB" in out and "MIG             ENABLED" in out
    assert fake.initialized == 0


def test_bad_arguments_are_clear(capsys) -> None:
    assert main(["profile", "--device", "simulated:a100", "--values", "1400"]) == 2
    assert "not a supported SM clock" in capsys.readouterr().err
    assert main(["profile", "--device", "tpu:0"]) == 2
    assert "expected nvml:<index> or simulated:<preset>" in capsys.readouterr().err
    assert main(["profile", "--device", "simulated:a100", "--workload", "os:getcwd"]) == 2
    assert "does no simulated GPU work" in capsys.readouterr().err


@pytest.mark.skipif(not DATA.exists(), reason="../shared/data not present")
def test_import_perseus(tmp_path: Path) -> None:
    src = DATA / "perseus-sosp24" / "gpt3-175b+a100_sxm_bf16.csv"
    out = tmp_path / "perseus.csv"
    assert main(["profile", "--import", "perseus", "--input", str(src), "-q", "-o", str(out)]) == 0
    df = read_profile(out)
    assert len(df) == 608 and set(df["source"]) == {"perseus-profile"}
