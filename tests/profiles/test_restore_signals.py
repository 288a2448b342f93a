"""GPU settings come back on SIGTERM, SIGHUP and SystemExit, each setting on its own."""

from __future__ import annotations

import signal

import pytest

from energyopt.profiles.collector import Terminated, restored_settings, sweep
from energyopt.profiles.device import GpuError
from energyopt.profiles.fake_nvml import FakeGpu, FakeNvml
from energyopt.profiles.nvml import NvmlDevice

ORIGINAL_LIMIT_MW = 350_000  # not the default, so "restored" cannot mean "reset to default"


def make() -> tuple[FakeNvml, FakeGpu, NvmlDevice]:
    gpu = FakeGpu(power_limit_mw=ORIGINAL_LIMIT_MW)
    fake = FakeNvml([gpu])
    return fake, gpu, NvmlDevice(0, fake, clock=lambda: gpu.time_s)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_signal_during_sweep_restores_clock_and_power_limit(signum: int) -> None:
    fake, gpu, dev = make()
    before = signal.getsignal(signum)
    calls = {"n": 0}

    def step() -> None:
        calls["n"] += 1
        fake.advance(0.01)
        if calls["n"] == 4:
            signal.raise_signal(signum)

    with pytest.raises(Terminated) as err:
        sweep(dev, step, "sm_clock_mhz", [1410, 1200], iterations=2)
    assert err.value.code == 128 + signum
    assert gpu.locked_clocks_mhz is None
    assert gpu.power_limit_mw == ORIGINAL_LIMIT_MW
    assert signal.getsignal(signum) is before  # the previous handler is back


def test_signal_during_power_limit_sweep_restores_the_limit() -> None:
    fake, gpu, dev = make()
    fake.inject(
        "nvmlDeviceSetPowerManagementLimit",
        lambda: signal.raise_signal(signal.SIGTERM),
        on_call=2,  # while the second limit is being set
    )
    with pytest.raises(Terminated):
        sweep(dev, lambda: fake.advance(0.01), "power_limit_w", [250.0, 200.0], iterations=1)
    assert gpu.power_limit_mw == ORIGINAL_LIMIT_MW


def test_system_exit_during_clock_reset_still_restores_the_power_limit(capsys) -> None:
    fake, gpu, dev = make()
    fake.inject("nvmlDeviceResetGpuLockedClocks", SystemExit(3))
    with pytest.raises(SystemExit) as err:
        with restored_settings(dev) as guard:
            guard.lock_sm_clock(1200)
            guard.set_power_limit_w(200.0)
    assert err.value.code == 3
    assert gpu.power_limit_mw == ORIGINAL_LIMIT_MW  # restored although the reset was cut
    assert gpu.locked_clocks_mhz == (1200, 1200)  # the reset itself never ran
    warning = capsys.readouterr().err
    assert "resetting the SM clock was interrupted" in warning and "-rgc" in warning


def test_failed_clock_reset_names_what_was_not_restored() -> None:
    fake, gpu, dev = make()
    fake.inject("nvmlDeviceResetGpuLockedClocks", RuntimeError("bus error"))
    with pytest.raises(GpuError, match=r"not restored: resetting the SM clock failed.*-rgc"):
        with restored_settings(dev) as guard:
            guard.lock_sm_clock(1200)
            guard.set_power_limit_w(200.0)
    assert gpu.power_limit_mw == ORIGINAL_LIMIT_MW


def test_sigterm_during_the_restore_is_held_until_both_settings_are_back() -> None:
    fake, gpu, dev = make()
    fake.inject("nvmlDeviceResetGpuLockedClocks", lambda: signal.raise_signal(signal.SIGTERM))
    with pytest.raises(Terminated):
        with restored_settings(dev) as guard:
            guard.lock_sm_clock(1200)
            guard.set_power_limit_w(200.0)
    assert gpu.locked_clocks_mhz is None
    assert gpu.power_limit_mw == ORIGINAL_LIMIT_MW
