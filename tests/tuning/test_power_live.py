"""The JIT power-limit optimizer on a live source: the simulated GPU of energyopt.profiles."""

from __future__ import annotations

import pytest

from energyopt.tuning import JitPowerLimitOptimizer, energy_time_cost
from energyopt.tuning.power import probe_from_device

simulated = pytest.importorskip("energyopt.profiles.simulated")

LIMITS = [100.0, 125.0, 150.0, 175.0, 200.0, 225.0, 250.0]


def _setup():
    gpu = simulated.SimulatedGpu("v100", noise=0.0)
    works = {
        b: simulated.SimulatedWork(f"b{b}", cycles=0.02 * b, fixed_s=0.002, activity=0.9)
        for b in (32, 256)
    }
    return gpu, works, probe_from_device(gpu, lambda b: gpu.step(works[b]), iterations=10)


@pytest.mark.parametrize("eta", [0.0, 0.5, 1.0])
def test_jit_on_simulated_gpu_matches_brute_force(eta):
    gpu, works, probe = _setup()
    jit = JitPowerLimitOptimizer(LIMITS, eta)
    for b, work in works.items():
        chosen = jit.optimize(b, probe)
        # Brute force from the simulator's noise-free model, per iteration (Eq. 7).
        costs = {}
        for p in LIMITS:
            gpu.set_power_limit_w(p)
            t, e = gpu.expected(work)
            costs[p] = energy_time_cost(e, t, eta, 250.0)
        gpu.set_power_limit_w(250.0)
        best = min(costs, key=lambda p: (round(costs[p], 12), -p))
        assert chosen == best
        assert "simulated" in jit.profiles[b].source
    assert gpu.power_limit_w() == 250.0  # the probe puts the limit back


def test_energy_weight_moves_the_limit_down():
    _, _, probe = _setup()
    picks = [JitPowerLimitOptimizer(LIMITS, eta).optimize(256, probe) for eta in (0.0, 0.5, 1.0)]
    # eta = 0 (time only) runs at the top limit; more weight on energy never raises it.
    assert picks[0] == 250.0 and picks[0] >= picks[1] >= picks[2]
