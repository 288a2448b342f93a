"""The NVML collector against the replaying fake NVML, with injected faults."""

from __future__ import annotations

import signal
import time

import pytest

from energyopt.core.instance import InstanceError
from energyopt.profiles.collector import measure, restored_settings, sweep
from energyopt.profiles.device import (
    GpuError,
    GpuPermissionError,
    GpuUnavailableError,
)
from energyopt.profiles.fake_nvml import (
    NVML_ERROR_NO_PERMISSION,
    FakeGpu,
    FakeNvml,
)
from energyopt.profiles.nvml import NvmlDevice

ORIGINAL_LIMIT_MW = 350_000  # not the default, so "restored" cannot mean "reset to default"


def make(gpu: FakeGpu | None = None) -> tuple[FakeNvml, FakeGpu, NvmlDevice]:
    gpu = gpu or FakeGpu(power_limit_mw=ORIGINAL_LIMIT_MW)
    fake = FakeNvml([gpu])
    # the fake's virtual time is the collector's clock: steps advance it
    dev = NvmlDevice(0, fake, clock=lambda: gpu.time_s)
    return fake, gpu, dev


def assert_restored(fake: FakeNvml, gpu: FakeGpu, limit_mw: int = ORIGINAL_LIMIT_MW) -> None:
    assert gpu.locked_clocks_mhz is None
    assert gpu.power_limit_mw == limit_mw
    assert fake.count("nvmlDeviceResetGpuLockedClocks") >= 1 or all(
        name != "nvmlDeviceSetGpuLockedClocks" for name, _ in fake.calls
    )


# -- discovery --------------------------------------------------------------------------
def test_discovery_reports_clocks_power_range_counter_and_mig() -> None:
    fake, _, dev = make()
    info = dev.info
    assert info.name == "NVIDIA A100-SXM4-40GB"
    assert info.supported_sm_clocks_mhz[0] == 1410 and info.supported_sm_clocks_mhz[-1] == 210
    assert len(info.supported_sm_clocks_mhz) == 81  # (1410 - 210) / 15 + 1
    assert (info.power_limit_min_w, info.power_limit_max_w) == (100.0, 400.0)
    assert info.default_power_limit_w == 400.0
    assert info.has_energy_counter is True
    assert info.mig_enabled is None
    assert "MIG             not supported" in info.describe()
    dev.close()
    assert fake.initialized == 0  # nvmlShutdown balanced nvmlInit


def test_mig_enabled_is_reported_and_sweeps_are_refused_before_touching_the_gpu() -> None:
    fake, _gpu, dev = make(FakeGpu(mig_mode=1))
    assert dev.info.mig_enabled is True
    assert "MIG             ENABLED" in dev.info.describe()
    with pytest.raises(GpuError, match=r"MIG enabled.*nvidia-smi -i 0 -mig 0"):
        sweep(dev, lambda: None, "sm_clock_mhz", [1410])
    assert fake.count("nvmlDeviceSetGpuLockedClocks") == 0
    assert fake.count("nvmlDeviceSetPowerManagementLimit") == 0
    _fake2, _, dev2 = make(FakeGpu(mig_mode=0))
    assert dev2.info.mig_enabled is False
    assert "MIG             disabled" in dev2.info.describe()


def test_missing_gpu_index_and_missing_library_are_one_line_errors() -> None:
    fake = FakeNvml([FakeGpu()])
    with pytest.raises(GpuUnavailableError, match=r"GPU index 3 does not exist.*0\.\.0"):
        NvmlDevice(3, fake)
    assert fake.initialized == 0
    fake = FakeNvml([FakeGpu()])
    fake.inject("nvmlInit", 12)  # NVML_ERROR_LIBRARY_NOT_FOUND
    with pytest.raises(GpuUnavailableError, match="no NVIDIA driver found") as err:
        NvmlDevice(0, fake)
    assert "\n" not in str(err.value)


def test_this_machine_real_pynvml_without_gpu_gives_a_clear_error() -> None:
    pynvml = pytest.importorskip("pynvml")
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        with pytest.raises(GpuUnavailableError, match="simulated"):
            NvmlDevice(0)
    else:  # pragma: no cover - only on a machine with a GPU
        pynvml.nvmlShutdown()
        pytest.skip("a real NVIDIA GPU is present")


# -- replayed energy readings -----------------------------------------------------------
def test_counter_readings_are_replayed_exactly() -> None:
    # the recorded counter: 0 at discovery, then (start, end) of two windows
    gpu = FakeGpu(energy_mj=[0, 1000, 4000, 10_000, 13_000], power_limit_mw=ORIGINAL_LIMIT_MW)
    fake, _, dev = make(gpu)
    df = sweep(
        dev,
        lambda: fake.advance(0.5),
        "sm_clock_mhz",
        [1410, 1005],
        iterations=2,
        warmup=0,
    )
    # window 1: 2 steps of 0.5 s -> 0.5 s/step; (4000 - 1000) mJ / 2 = 1.5 J/step
    # window 2: (13000 - 10000) mJ / 2 = 1.5 J/step; power 1.5 J / 0.5 s = 3 W
    assert df["time_s"].tolist() == [0.5, 0.5]
    assert df["energy_j"].tolist() == [1.5, 1.5]
    assert df["power_w"].tolist() == [3.0, 3.0]
    assert df["samples"].tolist() == [2, 2]
    assert df.attrs["energy_method"] == "energy-counter"
    assert df.attrs["sampling_period_s"] is None
    assert df.attrs["driver_version"] == "550.54.15"
    assert set(df["source"]) == {"nvml"}
    locks = [args[1:] for name, args in fake.calls if name == "nvmlDeviceSetGpuLockedClocks"]
    assert locks == [(1410, 1410), (1005, 1005)]
    assert_restored(fake, gpu)


def test_no_energy_counter_falls_back_to_sampling_with_the_period_in_metadata() -> None:
    gpu = FakeGpu(energy_mj=None, power_mw=200_000)  # 200 W, constant
    fake = FakeNvml([gpu])
    dev = NvmlDevice(0, fake)  # real clock: the sampler thread runs in real time
    assert dev.info.has_energy_counter is False
    assert "power is sampled" in dev.info.describe()
    df = sweep(
        dev,
        lambda: time.sleep(0.01),
        "power_limit_w",
        [300.0],
        iterations=5,
        warmup=0,
        sampling_period_s=0.005,
    )
    assert df.attrs["energy_method"] == "power-sampling"
    assert df.attrs["sampling_period_s"] == 0.005
    # constant 200 W integrates exactly to 200 W x the window, whatever the timing
    t, e = df["time_s"].iloc[0], df["energy_j"].iloc[0]
    assert e == pytest.approx(200.0 * t, rel=1e-9)
    assert fake.count("nvmlDeviceGetPowerUsage") >= 3  # start, >= 1 in the thread, stop
    assert fake.count("nvmlDeviceGetTotalEnergyConsumption") == 1  # the discovery probe only
    assert gpu.power_limit_mw == 400_000


def test_sampling_integrates_a_replayed_power_trace() -> None:
    gpu = FakeGpu(energy_mj=None, power_mw=lambda g: 100_000 + 100_000 * g.time_s)
    fake, _, dev = make(gpu)
    meter = dev.meter(sampling_period_s=0.001)
    meter.start()
    fake.advance(2.0)  # power ramps 100 W -> 300 W over 2 s: exactly 400 J by trapezoid
    energy = meter.stop()
    assert energy == pytest.approx(400.0)


# -- faults mid-sweep: the GPU is always restored ------------------------------------------
@pytest.mark.parametrize(
    "knob, values", [("sm_clock_mhz", [1410, 1200, 900]), ("power_limit_w", [300.0, 200.0, 150.0])]
)
def test_exception_mid_sweep_restores_clocks_and_power_limit(knob: str, values: list) -> None:
    fake, gpu, dev = make()
    calls = {"n": 0}

    def step() -> None:
        calls["n"] += 1
        fake.advance(0.01)
        if calls["n"] == 7:  # inside the second setting's window
            raise RuntimeError("CUDA error: an illegal memory access")

    with pytest.raises(RuntimeError, match="illegal memory access"):
        sweep(dev, step, knob, values, iterations=3, warmup=1)
    assert calls["n"] == 7
    assert_restored(fake, gpu)


def test_keyboard_interrupt_mid_sweep_restores_clocks_and_power_limit() -> None:
    fake, gpu, dev = make()
    calls = {"n": 0}

    def step() -> None:
        calls["n"] += 1
        fake.advance(0.01)
        if calls["n"] == 5:
            raise KeyboardInterrupt  # what Ctrl-C raises in the main thread

    with pytest.raises(KeyboardInterrupt):
        sweep(dev, {"forward": step, "backward": step}, "sm_clock_mhz", [1410, 1200], iterations=2)
    assert gpu.locked_clocks_mhz is None
    assert gpu.power_limit_mw == ORIGINAL_LIMIT_MW


def test_ctrl_c_inside_an_nvml_call_restores_the_power_limit() -> None:
    fake, gpu, dev = make()
    # the second power-limit change is interrupted after the first one applied
    fake.inject("nvmlDeviceSetPowerManagementLimit", KeyboardInterrupt(), on_call=2)
    with pytest.raises(KeyboardInterrupt):
        sweep(dev, lambda: fake.advance(0.01), "power_limit_w", [250.0, 200.0], iterations=1)
    assert gpu.power_limit_mw == ORIGINAL_LIMIT_MW
    assert gpu.locked_clocks_mhz is None


@pytest.mark.skipif(
    signal.getsignal(signal.SIGINT) is not signal.default_int_handler,
    reason="SIGINT is not Python's default handler in this process",
)
def test_real_sigint_during_sweep_and_during_restore() -> None:
    fake, gpu, dev = make()
    calls = {"n": 0}

    def step() -> None:
        calls["n"] += 1
        fake.advance(0.01)
        if calls["n"] == 4:
            signal.raise_signal(signal.SIGINT)

    with pytest.raises(KeyboardInterrupt):
        sweep(dev, step, "sm_clock_mhz", [1410, 1200], iterations=2)
    assert_restored(fake, gpu)

    # a Ctrl-C arriving while the clock is being reset is held until the power limit
    # is back too, then raised
    fake, gpu, dev = make()
    fake.inject("nvmlDeviceResetGpuLockedClocks", lambda: signal.raise_signal(signal.SIGINT))
    with pytest.raises(KeyboardInterrupt):
        with restored_settings(dev) as guard:
            guard.lock_sm_clock(1200)
            guard.set_power_limit_w(200.0)
    assert_restored(fake, gpu)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


# -- permissions --------------------------------------------------------------------------
def test_permission_error_on_clock_lock_is_one_line_saying_what_is_needed() -> None:
    fake, gpu, dev = make()
    fake.inject("nvmlDeviceSetGpuLockedClocks", NVML_ERROR_NO_PERMISSION)
    with pytest.raises(GpuPermissionError) as err:
        sweep(dev, lambda: fake.advance(0.01), "sm_clock_mhz", [1410])
    msg = str(err.value)
    assert "\n" not in msg
    assert "NVML_ERROR_NO_PERMISSION" in msg and "root" in msg
    assert "nvidia-smi -i 0 -lgc 1410,1410" in msg
    assert_restored(fake, gpu)


def test_permission_error_on_power_limit_names_the_command() -> None:
    fake, gpu, dev = make()
    fake.inject("nvmlDeviceSetPowerManagementLimit", NVML_ERROR_NO_PERMISSION)
    with pytest.raises(GpuPermissionError, match=r"nvidia-smi -i 0 -pl 250") as err:
        sweep(dev, lambda: fake.advance(0.01), "power_limit_w", [250.0])
    assert "\n" not in str(err.value)
    assert gpu.power_limit_mw == ORIGINAL_LIMIT_MW


def test_failed_restore_is_an_error_naming_the_manual_command() -> None:
    fake, gpu, dev = make()
    fake.inject("nvmlDeviceResetGpuLockedClocks", NVML_ERROR_NO_PERMISSION)
    with pytest.raises(GpuError, match=r"run `nvidia-smi -i 0 -rgc`"):
        sweep(dev, lambda: fake.advance(0.01), "sm_clock_mhz", [1410], iterations=1)
    assert gpu.locked_clocks_mhz == (1410, 1410)  # the fake really could not reset it


def test_failed_restore_does_not_hide_the_original_exception(capsys) -> None:
    fake, _gpu, dev = make()
    fake.inject("nvmlDeviceResetGpuLockedClocks", NVML_ERROR_NO_PERMISSION)

    def step() -> None:
        raise ValueError("bad batch")

    with pytest.raises(ValueError, match="bad batch"):
        sweep(dev, step, "sm_clock_mhz", [1410], warmup=0)
    assert "nvidia-smi -i 0 -rgc" in capsys.readouterr().err


# -- input checks happen before anything is changed -------------------------------------------
def test_unsupported_clock_and_out_of_range_limit_are_rejected_up_front() -> None:
    fake, _gpu, dev = make()
    with pytest.raises(InstanceError, match=r"sm_clock_mhz = 1400.*nearest 1395"):
        sweep(dev, lambda: None, "sm_clock_mhz", [1410, 1400])
    with pytest.raises(InstanceError, match=r"power_limit_w = 450.*100-400 W"):
        sweep(dev, lambda: None, "power_limit_w", [450.0])
    with pytest.raises(InstanceError, match="knob"):
        sweep(dev, lambda: None, "memory_clock_mhz", [1000])
    assert fake.count("nvmlDeviceSetGpuLockedClocks") == 0
    assert fake.count("nvmlDeviceSetPowerManagementLimit") == 0


def test_measure_runs_at_least_the_requested_seconds() -> None:
    fake, _, dev = make()
    t, _, n = measure(dev, lambda: fake.advance(0.125), iterations=2, seconds=1.0, warmup=0)
    # 0.125 s per step (exact in binary): 2 iterations are not enough, 8 steps reach 1.0 s
    assert n == 8
    assert t == 0.125


def test_gpu_without_power_management_still_sweeps_clocks() -> None:
    _, _, dev = make()
    fake2 = FakeNvml([FakeGpu()])
    fake2.inject("nvmlDeviceGetPowerManagementLimitConstraints", 3)  # NOT_SUPPORTED
    fake2.inject("nvmlDeviceGetPowerManagementLimit", 3, times=5)
    g2 = fake2.gpus[0]
    dev2 = NvmlDevice(0, fake2, clock=lambda: g2.time_s)
    assert "not adjustable" in dev2.info.describe()
    df = sweep(dev2, lambda: fake2.advance(0.01), "sm_clock_mhz", [1410], iterations=1)
    assert len(df) == 1 and df.attrs["original_power_limit_w"] is None
    assert g2.locked_clocks_mhz is None
    with pytest.raises(InstanceError, match="does not expose power management"):
        sweep(dev2, lambda: None, "power_limit_w", [200.0])
    with pytest.raises(InstanceError, match="whole number"):
        sweep(dev, lambda: None, "sm_clock_mhz", [1410.5])


def test_interrupt_inside_the_clock_reset_still_restores_the_power_limit(capsys) -> None:
    fake, gpu, dev = make()
    fake.inject("nvmlDeviceResetGpuLockedClocks", KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        with restored_settings(dev) as guard:
            guard.lock_sm_clock(1200)
            guard.set_power_limit_w(200.0)
    assert gpu.power_limit_mw == ORIGINAL_LIMIT_MW  # undone although the reset was cut
    assert gpu.locked_clocks_mhz == (1200, 1200)  # the interrupted reset did not happen...
    assert "resetting the SM clock was interrupted; run `nvidia-smi -i 0 -rgc`" in (
        capsys.readouterr().err  # ...and the user is told how to finish it
    )
