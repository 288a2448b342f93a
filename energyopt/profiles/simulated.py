"""A simulated GPU with the collector's interface, for everything without a GPU.

Every profile it produces has ``source = "simulated"``; its metadata names the
preset, the seed and the model parameters.

The DVFS model (PowerFlow Section 4.2)
--------------------------------------
For SM clock ``f`` (MHz) the supply voltage, relative to its flat value, is

    V(f) = 1                                              if f <= f_knee
    V(f) = 1 + (V_max - 1) * (f - f_knee) / (f_max - f_knee)  otherwise

(flat below a knee clock and rising linearly above it, PowerFlow 4.2, "GPU
voltage and frequency"). Power while a workload of switching activity ``a``
runs is static plus dynamic power,

    P_static(f)  = P_s * V(f)                (PowerFlow Eq. 11: proportional to V)
    P_dynamic(f) = a * c * V(f)^2 * f         (PowerFlow Eq. 10: a * C * V^2 * f)

so power is linear in ``f`` below the knee and cubic-like above it. A workload
takes ``cycles`` million SM cycles plus ``fixed_s`` seconds that do not scale
with the clock (memory, I/O), as in PowerFlow Eq. 3 (``alpha + kappa / f``):

    t(f) = cycles / f + fixed_s,        E(f) = (P_static(f) + P_dynamic(f)) * t(f).

Power limit: when ``P(f)`` would exceed the limit, the GPU runs at the fastest
supported clock at or below the requested one whose power fits (the lowest
supported clock if none does). Unlocked, the GPU runs at its highest clock.

Noise: each execution's time and power are multiplied by ``1 + noise * z`` with
``z`` standard normal from a seeded generator (``noise = 0`` is deterministic).

Presets
-------
Clock ranges and power-limit ranges are the GPUs' real ones (as NVML reports
them; clock steps of 15 MHz, V100 about 7.5 MHz). The electrical parameters
are *not* measured: the A100 preset's were matched by hand to three points
(855, 1080, 1380 MHz) of the average power of stage 1 backward in the published
Perseus GPT-3 A100 profile (about 239, 286 and 482 W); the others are scaled
from it to their power range. Use them for plausible shapes, not for claims
about a real GPU.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from energyopt.profiles.device import DeviceInfo, EnergyMeter, GpuDevice, GpuError, trapezoid


@dataclasses.dataclass(frozen=True)
class GpuPreset:
    """A simulated GPU model (see the module docstring for the equations)."""

    name: str
    min_clock_mhz: int
    max_clock_mhz: int
    clock_step_mhz: float
    knee_clock_mhz: int
    max_voltage_rel: float
    static_power_w: float
    dynamic_w_per_mhz: float
    power_limit_min_w: float
    power_limit_max_w: float
    default_power_limit_w: float

    @property
    def supported_clocks_mhz(self) -> tuple[int, ...]:
        """Supported SM clocks, fastest first (``max_clock`` down by ``clock_step``)."""
        n = math.floor((self.max_clock_mhz - self.min_clock_mhz) / self.clock_step_mhz)
        clocks = {round(self.max_clock_mhz - k * self.clock_step_mhz) for k in range(n + 1)}
        clocks.add(self.min_clock_mhz)
        return tuple(sorted(clocks, reverse=True))

    def voltage(self, f_mhz: float) -> float:
        """Relative supply voltage V(f): 1 below the knee, linear up to ``max_voltage_rel``."""
        if f_mhz <= self.knee_clock_mhz:
            return 1.0
        span = self.max_clock_mhz - self.knee_clock_mhz
        return 1.0 + (self.max_voltage_rel - 1.0) * (f_mhz - self.knee_clock_mhz) / span

    def power_w(self, f_mhz: float, activity: float) -> float:
        """Static (Eq. 11) plus dynamic (Eq. 10) power at clock ``f``."""
        v = self.voltage(f_mhz)
        return self.static_power_w * v + activity * self.dynamic_w_per_mhz * v * v * f_mhz


PRESETS: dict[str, GpuPreset] = {
    p.name: p
    for p in (
        # calibrated by hand on the Perseus GPT-3 A100 profile (module docstring)
        GpuPreset("NVIDIA A100-SXM4-40GB", 210, 1410, 15, 1080, 1.21, 59.0, 0.21, 100, 400, 400),
        GpuPreset("Tesla V100-PCIE-32GB", 135, 1380, 7.5, 1050, 1.18, 40.0, 0.12, 100, 250, 250),
        GpuPreset("NVIDIA A40", 210, 1740, 15, 1320, 1.19, 45.0, 0.12, 100, 300, 300),
        GpuPreset("NVIDIA H100 80GB HBM3", 345, 1980, 15, 1500, 1.2, 110.0, 0.26, 200, 700, 700),
    )
}
_ALIASES = {"a100": "NVIDIA A100-SXM4-40GB", "v100": "Tesla V100-PCIE-32GB", "a40": "NVIDIA A40"}
_ALIASES["h100"] = "NVIDIA H100 80GB HBM3"


def get_preset(name: str) -> GpuPreset:
    """A preset by its NVML name or a short alias (``a100``, ``v100``, ``a40``, ``h100``)."""
    key = _ALIASES.get(name.lower(), name)
    if key not in PRESETS:
        known = ", ".join(sorted(_ALIASES))
        raise ValueError(f"simulated GPU preset = {name!r}: unknown; known: {known}")
    return PRESETS[key]


@dataclasses.dataclass(frozen=True)
class SimulatedWork:
    """One execution of a simulated workload (see the model in the module docstring).

    Parameters
    ----------
    name
        Label, e.g. ``matmul`` or ``s0/forward``.
    cycles
        Millions of SM cycles (MHz x s): the clock-bound part, time ``cycles / f``.
    fixed_s
        Seconds that do not depend on the SM clock.
    activity
        Switching activity ``a`` in ``[0, 1]`` scaling dynamic power.
    """

    name: str
    cycles: float
    fixed_s: float = 0.0
    activity: float = 1.0

    def __post_init__(self) -> None:
        for field in ("cycles", "fixed_s", "activity"):
            v = getattr(self, field)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
                raise ValueError(f"SimulatedWork.{field} = {v!r}: must be a finite number >= 0")
        if self.cycles == 0 and self.fixed_s == 0:
            raise ValueError("SimulatedWork: cycles and fixed_s are both 0 (no work)")
        if self.activity > 1:
            raise ValueError(f"SimulatedWork.activity = {self.activity!r}: must be <= 1")


# Built-in simulated workloads. ``matmul`` is the loop ``energyopt profile`` runs on a
# real GPU; ``transformer-layer`` is forward/backward of one layer, backward doing
# twice the forward's arithmetic (the usual 2:1 ratio).
WORKLOADS: dict[str, dict[str, SimulatedWork]] = {
    "matmul": {"iteration": SimulatedWork("matmul", cycles=20.0, fixed_s=0.0005, activity=0.9)},
    "transformer-layer": {
        "forward": SimulatedWork("forward", cycles=12.0, fixed_s=0.0015, activity=0.85),
        "backward": SimulatedWork("backward", cycles=24.0, fixed_s=0.0025, activity=0.95),
    },
}


class SimulatedGpu(GpuDevice):
    """A GPU following the DVFS model of the module docstring, on a virtual clock.

    ``run(work)`` advances the virtual clock and the energy counter by one
    execution of ``work`` at the current effective clock. With
    ``has_energy_counter=False`` the meter samples the (piecewise-constant)
    power every ``sampling_period_s`` of virtual time and integrates the samples,
    as the collector does on a real GPU without a counter.
    """

    backend = "simulated"
    source = "simulated"

    def __init__(
        self,
        preset: str | GpuPreset = "a100",
        *,
        seed: int = 0,
        noise: float = 0.01,
        has_energy_counter: bool = True,
        index: int = 0,
    ) -> None:
        self.preset = preset if isinstance(preset, GpuPreset) else get_preset(preset)
        if not (math.isfinite(noise) and 0 <= noise < 0.5):
            raise ValueError(f"noise = {noise!r}: must be in [0, 0.5)")
        self.seed = int(seed)
        self.noise = float(noise)
        self._rng = np.random.default_rng(self.seed)
        self._time_s = 0.0
        self._energy_j = 0.0
        self._locked: int | None = None
        self._power_limit_w = float(self.preset.default_power_limit_w)
        self._last_power_w = self.preset.static_power_w
        # (start, end, watts) of each execution, for the sampling meter
        self.segments: list[tuple[float, float, float]] = []
        p = self.preset
        self._info = DeviceInfo(
            index=index,
            name=p.name,
            uuid=f"SIM-{p.name.replace(' ', '-')}-seed{self.seed}",
            driver_version="simulated",
            supported_sm_clocks_mhz=p.supported_clocks_mhz,
            power_limit_min_w=p.power_limit_min_w,
            power_limit_max_w=p.power_limit_max_w,
            default_power_limit_w=p.default_power_limit_w,
            has_energy_counter=has_energy_counter,
            mig_enabled=None,
            backend=self.backend,
        )

    @property
    def info(self) -> DeviceInfo:
        return self._info

    def metadata(self) -> dict[str, Any]:
        """What a profile's metadata records about this simulated GPU."""
        return {
            "source": self.source,
            "simulated_preset": dataclasses.asdict(self.preset),
            "simulated_seed": self.seed,
            "simulated_noise": self.noise,
            "simulated_model": "PowerFlow 4.2 DVFS: V flat below knee, P = P_s V + a c V^2 f",
        }

    # -- the model -----------------------------------------------------------------------
    def effective_clock_mhz(self, work: SimulatedWork) -> int:
        """The clock ``work`` runs at: requested (or max) clock, throttled by the power limit."""
        requested = self._locked if self._locked is not None else self.preset.max_clock_mhz
        clocks = [f for f in self.preset.supported_clocks_mhz if f <= requested]
        for f in clocks:  # fastest first
            if self.preset.power_w(f, work.activity) <= self._power_limit_w:
                return f
        return clocks[-1] if clocks else self.preset.min_clock_mhz

    def expected(self, work: SimulatedWork) -> tuple[float, float]:
        """Noise-free ``(time_s, energy_j)`` of one execution at the current settings."""
        f = self.effective_clock_mhz(work)
        t = work.cycles / f + work.fixed_s
        return t, self.preset.power_w(f, work.activity) * t

    def run(self, work: SimulatedWork) -> None:
        """Execute ``work`` once: advance the virtual clock and the energy counter."""
        f = self.effective_clock_mhz(work)
        t = work.cycles / f + work.fixed_s
        p = self.preset.power_w(f, work.activity)
        if self.noise:
            zt, zp = self._rng.standard_normal(2)
            t *= max(0.5, 1.0 + self.noise * zt)
            p *= max(0.5, 1.0 + self.noise * zp)
        self.segments.append((self._time_s, self._time_s + t, p))
        if len(self.segments) > 100_000:  # the sampler only needs the recent past
            del self.segments[:50_000]
        self._time_s += t
        self._energy_j += p * t
        self._last_power_w = p

    def step(self, work: SimulatedWork) -> Callable[[], None]:
        """A zero-argument step function running ``work`` once (for the collector)."""
        return lambda: self.run(work)

    def steps(self, workload: str) -> dict[str, Callable[[], None]]:
        """Step functions of a built-in workload (:data:`WORKLOADS`), by operation."""
        if workload not in WORKLOADS:
            raise ValueError(
                f"simulated workload = {workload!r}: unknown; known: {', '.join(WORKLOADS)}"
            )
        return {op: self.step(w) for op, w in WORKLOADS[workload].items()}

    # -- GpuDevice --------------------------------------------------------------------------
    def now(self) -> float:
        return self._time_s

    def lock_sm_clock(self, mhz: int) -> None:
        if int(mhz) not in self.preset.supported_clocks_mhz:
            raise GpuError(f"{self.preset.name} (simulated): {mhz} MHz is not a supported clock")
        self._locked = int(mhz)

    def reset_sm_clock(self) -> None:
        self._locked = None

    @property
    def locked_clock_mhz(self) -> int | None:
        return self._locked

    def power_limit_w(self) -> float:
        return self._power_limit_w

    def set_power_limit_w(self, watts: float) -> None:
        p = self.preset
        if not p.power_limit_min_w <= watts <= p.power_limit_max_w:
            raise GpuError(
                f"{p.name} (simulated): power limit {watts:g} W outside "
                f"{p.power_limit_min_w:g}-{p.power_limit_max_w:g} W"
            )
        self._power_limit_w = float(watts)

    def power_w(self) -> float:
        return self._last_power_w

    def energy_counter_mj(self) -> int:
        if not self.info.has_energy_counter:
            raise GpuError(f"{self.preset.name} (simulated): configured without an energy counter")
        return int(self._energy_j * 1000.0)

    def meter(self, sampling_period_s: float = 0.01) -> EnergyMeter:
        if self.info.has_energy_counter:
            return super().meter(sampling_period_s)
        return _VirtualSamplingMeter(self, sampling_period_s)


class _VirtualSamplingMeter(EnergyMeter):
    """Power sampling on the simulated GPU's virtual clock (no thread needed).

    The power at sample instant ``t0 + k * period`` is that of the execution
    running then; the window's energy is the trapezoidal integral of the
    samples, so it carries the same discretisation error as real sampling.
    """

    method = "power-sampling"

    def __init__(self, gpu: SimulatedGpu, sampling_period_s: float) -> None:
        if not sampling_period_s > 0:
            raise ValueError(f"sampling_period_s = {sampling_period_s!r}: must be positive")
        self.gpu = gpu
        self.sampling_period_s = float(sampling_period_s)
        self._t0: float | None = None

    def start(self) -> None:
        self._t0 = self.gpu.now()

    def stop(self, t0: float | None = None, t1: float | None = None) -> float:
        # the virtual clock does not move between the window's ends and the meter's
        if self._t0 is None:
            raise RuntimeError("stop() before start()")
        t0, t1 = self._t0, self.gpu.now()
        segs = [s for s in self.gpu.segments if s[1] > t0]
        if not segs or t1 <= t0:
            return 0.0
        times = [*list(np.arange(t0, t1, self.sampling_period_s)), t1]
        samples, k = [], 0
        for t in times:
            while k + 1 < len(segs) and segs[k][1] <= t:
                k += 1
            samples.append((float(t), segs[k][2]))
        return trapezoid(samples)
