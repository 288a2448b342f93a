"""Workloads for a real GPU: user callables ``module:function`` and the built-in matmul."""

from __future__ import annotations

import importlib.util
import sys
import time
import types
from pathlib import Path

import pytest

from energyopt.cli import main
from energyopt.core.instance import InstanceError
from energyopt.profiles import nvml as nvml_module
from energyopt.profiles.device import GpuError
from energyopt.profiles.fake_nvml import FakeGpu, FakeNvml
from energyopt.profiles.schema import read_profile
from energyopt.profiles.workloads import load_callable, matmul_workload


@pytest.fixture
def user_module(monkeypatch):
    mod = types.ModuleType("energyopt_user_layer")
    calls = {"forward": 0, "backward": 0, "sync": 0}

    def forward() -> None:
        calls["forward"] += 1
        time.sleep(0.001)

    def backward() -> None:
        calls["backward"] += 1
        time.sleep(0.002)

    def synchronize() -> None:
        calls["sync"] += 1

    mod.STEPS = {"forward": forward, "backward": backward}
    mod.forward = forward
    mod.synchronize = synchronize
    mod.NOT_CALLABLE = 3
    mod.calls = calls
    monkeypatch.setitem(sys.modules, "energyopt_user_layer", mod)
    return mod


def test_load_callable_accepts_a_function_or_a_mapping(user_module) -> None:
    wl = load_callable("energyopt_user_layer:STEPS")
    assert sorted(wl.steps) == ["backward", "forward"]
    assert wl.synchronize is user_module.synchronize
    wl = load_callable("energyopt_user_layer:forward")
    assert list(wl.steps) == ["iteration"]


@pytest.mark.parametrize(
    "spec, message",
    [
        ("no_colon", "expected 'module:function'"),
        ("energyopt_no_such_module_xyz:f", "cannot import"),
        ("energyopt_user_layer:missing", "has no attribute 'missing'"),
        ("energyopt_user_layer:NOT_CALLABLE", "neither callable nor a mapping"),
    ],
)
def test_load_callable_errors_are_clear(user_module, spec: str, message: str) -> None:
    with pytest.raises(InstanceError, match=message):
        load_callable(spec)


def test_matmul_needs_pytorch_or_cupy() -> None:
    have = any(importlib.util.find_spec(m) for m in ("torch", "cupy"))
    if have:  # pragma: no cover - not on the development machine
        pytest.skip("PyTorch or CuPy is installed")
    with pytest.raises(GpuError, match="needs PyTorch or CuPy"):
        matmul_workload()


def test_cli_profiles_a_user_callable_on_the_fake_gpu(
    user_module, monkeypatch, tmp_path: Path
) -> None:
    # a 100 W GPU: the replayed energy counter grows by 100 J per second of real time
    t0 = time.perf_counter()
    gpu = FakeGpu(energy_mj=lambda g: (time.perf_counter() - t0) * 100_000)
    fake = FakeNvml([gpu])
    monkeypatch.setattr(nvml_module, "load_pynvml", lambda: fake)
    out = tmp_path / "layer.csv"
    rc = main(
        [
            "profile",
            "--device",
            "nvml:0",
            "--workload",
            "energyopt_user_layer:STEPS",
            "--values",
            "1410,810",
            "--iterations",
            "3",
            "--warmup",
            "1",
            "--stage",
            "2",
            "-q",
            "--out",
            str(out),
        ]
    )
    assert rc == 0
    df = read_profile(out)
    assert set(df["source"]) == {"nvml"} and set(df["stage"]) == {2}
    assert df["knob_value"].tolist() == [1410, 1410, 810, 810]
    # power = energy / time = 100 W up to the counter's 1 mJ resolution
    assert df["power_w"].tolist() == pytest.approx([100.0] * 4, rel=0.02)
    assert (df[df.operation == "backward"]["time_s"] >= 0.002).all()
    assert user_module.calls["forward"] == 2 * (1 + 3)  # 2 clocks x (warm-up + measured)
    assert user_module.calls["sync"] >= 4
    assert gpu.locked_clocks_mhz is None and fake.initialized == 0
    assert df.attrs["driver_version"] == "550.54.15"
