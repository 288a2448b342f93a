"""The simulated GPU: the DVFS model by hand, seeded noise, throttling, labelling."""

from __future__ import annotations

import pytest

from energyopt.profiles.collector import clock_grid, power_limit_grid, sweep
from energyopt.profiles.device import GpuError
from energyopt.profiles.simulated import (
    PRESETS,
    WORKLOADS,
    SimulatedGpu,
    SimulatedWork,
    get_preset,
)

A100 = get_preset("a100")


def test_voltage_and_power_by_hand() -> None:
    # A100 preset: knee 1080 MHz, V_max 1.21 at 1410 MHz, P_s = 59 W, c = 0.21 W/MHz.
    # below the knee V = 1:  P(855)  = 59 + 0.21 * 855  = 59 + 179.55 = 238.55 W
    assert A100.voltage(855) == 1.0
    assert A100.power_w(855, 1.0) == pytest.approx(238.55)
    # at the knee:           P(1080) = 59 + 0.21 * 1080 = 59 + 226.8  = 285.8 W
    assert A100.power_w(1080, 1.0) == pytest.approx(285.8)
    # above: V(1380) = 1 + 0.21 * (1380 - 1080) / (1410 - 1080) = 1 + 63/330 = 1.190909...
    #        P(1380) = 59 * 1.190909 + 0.21 * 1.190909^2 * 1380
    #                = 70.2636 + 0.21 * 1.418264 * 1380 = 70.2636 + 411.0124 = 481.276 W
    assert A100.voltage(1380) == pytest.approx(1 + 63 / 330)
    assert A100.power_w(1380, 1.0) == pytest.approx(481.276, abs=1e-3)
    # half the activity halves only the dynamic part: 59 + 0.5 * 179.55 = 148.775 W
    assert A100.power_w(855, 0.5) == pytest.approx(148.775)


def test_presets_carry_real_clock_and_power_ranges() -> None:
    assert len(A100.supported_clocks_mhz) == 81  # 210..1410 MHz in 15 MHz steps
    assert A100.supported_clocks_mhz[:2] == (1410, 1395)
    for p in PRESETS.values():
        clocks = p.supported_clocks_mhz
        assert clocks[0] == p.max_clock_mhz and clocks[-1] == p.min_clock_mhz
        assert list(clocks) == sorted(clocks, reverse=True)
        assert p.min_clock_mhz < p.knee_clock_mhz < p.max_clock_mhz
        assert p.power_limit_min_w < p.default_power_limit_w <= p.power_limit_max_w
    with pytest.raises(ValueError, match="unknown; known: a100"):
        get_preset("b200")


def test_noise_free_execution_follows_the_model_exactly() -> None:
    gpu = SimulatedGpu("a100", noise=0.0)
    work = SimulatedWork("w", cycles=9.0, fixed_s=0.002, activity=0.5)
    gpu.lock_sm_clock(900)
    # t = 9 / 900 + 0.002 = 0.012 s; P = 59 + 0.5 * 0.21 * 900 = 153.5 W; E = 1.842 J
    assert gpu.expected(work) == pytest.approx((0.012, 1.842))
    df = sweep(gpu, gpu.step(work), "sm_clock_mhz", [900], iterations=10, warmup=2)
    assert df["time_s"].iloc[0] == pytest.approx(0.012)
    # the counter has 1 mJ resolution: 10 x 1.842 J = 18420 mJ exactly
    assert df["energy_j"].iloc[0] == pytest.approx(1.842, abs=1e-4)
    assert df["power_w"].iloc[0] == pytest.approx(153.5, rel=1e-4)


def test_every_row_and_the_metadata_say_simulated() -> None:
    gpu = SimulatedGpu("v100", seed=3)
    df = sweep(gpu, gpu.steps("transformer-layer"), "sm_clock_mhz", clock_grid(gpu, count=3))
    assert set(df["source"]) == {"simulated"}
    assert df.attrs["source"] == "simulated"
    assert df.attrs["simulated_seed"] == 3
    assert df.attrs["simulated_preset"]["name"] == "Tesla V100-PCIE-32GB"
    assert sorted(set(df["operation"])) == ["backward", "forward"]


def test_seeded_noise_is_reproducible_and_seed_dependent() -> None:
    def run(seed: int):
        gpu = SimulatedGpu("a40", seed=seed, noise=0.02)
        return sweep(gpu, gpu.steps("matmul"), "sm_clock_mhz", [1740, 1200, 600], iterations=5)

    a, b, c = run(7), run(7), run(8)
    assert a[["time_s", "energy_j"]].equals(b[["time_s", "energy_j"]])
    assert not a["time_s"].equals(c["time_s"])
    # noise of 2 % per execution stays close to the model over 5 executions
    gpu = SimulatedGpu("a40", noise=0.0)
    gpu.lock_sm_clock(1200)
    t, _ = gpu.expected(WORKLOADS["matmul"]["iteration"])
    assert a["time_s"].iloc[1] == pytest.approx(t, rel=0.05)


def test_clock_sweep_shapes_time_falls_power_rises() -> None:
    gpu = SimulatedGpu("a100", noise=0.0)
    work = SimulatedWork("w", cycles=10.0, fixed_s=0.001, activity=0.6)  # never throttled
    df = sweep(gpu, gpu.step(work), "sm_clock_mhz", clock_grid(gpu, count=9), iterations=2)
    df = df.sort_values("knob_value")
    assert df["time_s"].is_monotonic_decreasing
    assert df["power_w"].is_monotonic_increasing
    # energy is lowest between the extremes: static energy dominates at low clocks,
    # V^2 growth above the knee at high ones
    best = df.loc[df["energy_j"].idxmin(), "knob_value"]
    assert 210 < best < 1410


def test_power_limit_throttles_to_the_fastest_clock_that_fits() -> None:
    gpu = SimulatedGpu("a100", noise=0.0)
    work = WORKLOADS["matmul"]["iteration"]  # activity 0.9: ~462 W at 1410 MHz
    assert A100.power_w(1410, work.activity) > 400
    f400 = gpu.effective_clock_mhz(work)
    assert f400 < 1410
    assert A100.power_w(f400, work.activity) <= 400 < A100.power_w(f400 + 15, work.activity)
    df = sweep(gpu, gpu.step(work), "power_limit_w", power_limit_grid(gpu, 100.0), iterations=2)
    assert df["knob_value"].tolist() == [400.0, 300.0, 200.0, 100.0]
    assert df["time_s"].is_monotonic_increasing
    assert (df["power_w"] <= df["knob_value"] + 1e-6).all()
    assert gpu.power_limit_w() == 400.0  # restored


def test_simulated_gpu_without_counter_samples_power() -> None:
    gpu = SimulatedGpu("h100", noise=0.0, has_energy_counter=False)
    work = SimulatedWork("w", cycles=15.0, fixed_s=0.0, activity=0.5)
    df = sweep(gpu, gpu.step(work), "sm_clock_mhz", [1500], seconds=1.0, sampling_period_s=0.05)
    assert df.attrs["energy_method"] == "power-sampling"
    assert df.attrs["sampling_period_s"] == 0.05
    # constant power: sampling is exact up to rounding, = the model's energy per step
    gpu.lock_sm_clock(1500)
    t, e = gpu.expected(work)
    assert df["time_s"].iloc[0] == pytest.approx(t)
    assert df["energy_j"].iloc[0] == pytest.approx(e, rel=1e-6)
    with pytest.raises(GpuError, match="without an energy counter"):
        gpu.energy_counter_mj()


def test_exception_mid_sweep_restores_the_simulated_gpu() -> None:
    gpu = SimulatedGpu("a100")
    gpu.set_power_limit_w(333.0)
    n = {"k": 0}

    def step() -> None:
        n["k"] += 1
        if n["k"] == 10:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sweep(gpu, step, "power_limit_w", [300.0, 200.0], iterations=5)
    assert gpu.power_limit_w() == 333.0
    assert gpu.locked_clock_mhz is None


def test_bad_work_and_settings_are_rejected() -> None:
    with pytest.raises(ValueError, match="activity"):
        SimulatedWork("w", cycles=1.0, activity=1.5)
    with pytest.raises(ValueError, match="no work"):
        SimulatedWork("w", cycles=0.0)
    gpu = SimulatedGpu("a100")
    with pytest.raises(GpuError, match="not a supported clock"):
        gpu.lock_sm_clock(1400)
    with pytest.raises(GpuError, match="outside"):
        gpu.set_power_limit_w(50.0)
    with pytest.raises(ValueError, match="noise"):
        SimulatedGpu("a100", noise=-0.1)
