"""What the collector needs from a GPU, whether real (NVML) or simulated.

A :class:`GpuDevice` exposes the few operations a profiling sweep uses: a clock
(``now``), locking and resetting the SM clock, reading and setting the power
limit, and an :class:`EnergyMeter` for a measured window. Two implementations
exist: :class:`energyopt.profiles.nvml.NvmlDevice` (``pynvml`` from
nvidia-ml-py, or the replaying fake of :mod:`energyopt.profiles.fake_nvml`) and
:class:`energyopt.profiles.simulated.SimulatedGpu`.

Energy of a window comes from the GPU's total-energy counter (millijoules, Volta
and newer) when it has one; otherwise power is sampled in a background thread
every ``sampling_period_s`` and integrated with the trapezoidal rule, and the
period is recorded in the profile's metadata.
"""

from __future__ import annotations

import abc
import dataclasses
import itertools
import math
import threading
from typing import Any


class GpuError(RuntimeError):
    """A GPU operation failed; the message is one line saying what is needed."""


class GpuUnavailableError(GpuError):
    """No NVML library, no driver, or no GPU of that index."""


class GpuPermissionError(GpuError):
    """NVML refused a setting (``NVML_ERROR_NO_PERMISSION``)."""


class GpuNotSupportedError(GpuError):
    """The GPU does not support an operation (``NVML_ERROR_NOT_SUPPORTED``)."""


@dataclasses.dataclass(frozen=True)
class DeviceInfo:
    """What discovery reports about one GPU.

    ``mig_enabled`` is ``None`` when the GPU does not support MIG at all.
    ``supported_sm_clocks_mhz`` is sorted from the fastest clock down.
    """

    index: int
    name: str
    uuid: str
    driver_version: str
    supported_sm_clocks_mhz: tuple[int, ...]
    power_limit_min_w: float
    power_limit_max_w: float
    default_power_limit_w: float
    has_energy_counter: bool
    mig_enabled: bool | None
    backend: str

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["supported_sm_clocks_mhz"] = list(self.supported_sm_clocks_mhz)
        return d

    def describe(self) -> str:
        """A few human-readable lines, as printed by ``energyopt profile --list-devices``."""
        clocks = self.supported_sm_clocks_mhz
        if clocks:
            clock_txt = f"{min(clocks)}-{max(clocks)} MHz ({len(clocks)} supported SM clocks)"
        else:
            clock_txt = "not reported"
        if self.mig_enabled is None:
            mig = "not supported"
        elif self.mig_enabled:
            mig = (
                "ENABLED (energy, power, clocks and power limit belong to the whole GPU, "
                "shared by all MIG instances: sweeps are refused)"
            )
        else:
            mig = "disabled"
        energy = (
            "total-energy counter"
            if self.has_energy_counter
            else "no energy counter (power is sampled and integrated)"
        )
        if math.isnan(self.power_limit_max_w):
            power = "not adjustable (NVML reports no power management)"
        else:
            power = (
                f"{self.power_limit_min_w:g}-{self.power_limit_max_w:g} W "
                f"(default {self.default_power_limit_w:g} W)"
            )
        return "\n".join(
            [
                f"GPU {self.index}: {self.name} [{self.backend}]",
                f"  uuid            {self.uuid}",
                f"  driver          {self.driver_version}",
                f"  SM clocks       {clock_txt}",
                f"  power limit     {power}",
                f"  energy          {energy}",
                f"  MIG             {mig}",
            ]
        )


class EnergyMeter(abc.ABC):
    """Energy of one measured window: ``start()``, run the work, ``stop()`` -> joules."""

    method: str
    sampling_period_s: float | None = None

    @abc.abstractmethod
    def start(self) -> None: ...

    @abc.abstractmethod
    def stop(self, t0: float | None = None, t1: float | None = None) -> float:
        """Joules since ``start()``; a sampling meter integrates over ``[t0, t1]`` if given."""


class GpuDevice(abc.ABC):
    """The interface the collector drives (see the module docstring)."""

    @property
    @abc.abstractmethod
    def info(self) -> DeviceInfo: ...

    @abc.abstractmethod
    def now(self) -> float:
        """Seconds on a monotonic clock (virtual for a simulated GPU)."""

    @abc.abstractmethod
    def lock_sm_clock(self, mhz: int) -> None: ...

    @abc.abstractmethod
    def reset_sm_clock(self) -> None:
        """Return the SM clock to the driver's default (unlocked) behaviour."""

    @abc.abstractmethod
    def power_limit_w(self) -> float: ...

    @abc.abstractmethod
    def set_power_limit_w(self, watts: float) -> None: ...

    @abc.abstractmethod
    def power_w(self) -> float:
        """Instantaneous board power as the driver reports it."""

    @abc.abstractmethod
    def energy_counter_mj(self) -> int:
        """The total-energy counter in millijoules (only when ``info.has_energy_counter``)."""

    def meter(self, sampling_period_s: float = 0.01) -> EnergyMeter:
        """The energy meter of a window: the counter if there is one, else power sampling."""
        if self.info.has_energy_counter:
            return CounterMeter(self)
        return SamplingMeter(self, sampling_period_s)

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release the device (NVML shutdown); a no-op by default."""


class CounterMeter(EnergyMeter):
    """Difference of the total-energy counter (mJ) between start and stop."""

    method = "energy-counter"

    def __init__(self, device: GpuDevice) -> None:
        self.device = device
        self._start_mj: int | None = None

    def start(self) -> None:
        self._start_mj = self.device.energy_counter_mj()

    def stop(self, t0: float | None = None, t1: float | None = None) -> float:
        if self._start_mj is None:
            raise RuntimeError("CounterMeter.stop() before start()")
        end = self.device.energy_counter_mj()
        return (end - self._start_mj) / 1000.0


class SamplingMeter(EnergyMeter):
    """Board power sampled every ``sampling_period_s`` in a thread, integrated.

    Samples are taken at ``start()``, every period, and at ``stop()``; the energy
    is the trapezoidal integral over the window. NVML's power reading is itself
    an average over a driver-defined interval (up to about one second on recent
    GPUs), so windows should last several seconds for this to be accurate.
    """

    method = "power-sampling"

    def __init__(self, device: GpuDevice, sampling_period_s: float) -> None:
        if not sampling_period_s > 0:
            raise ValueError(f"sampling_period_s = {sampling_period_s!r}: must be positive")
        self.device = device
        self.sampling_period_s = float(sampling_period_s)
        self._samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def _sample(self) -> None:
        # power first, then the time stamp: both belong to the same instant as
        # closely as Python allows
        p = self.device.power_w()
        self._samples.append((self.device.now(), p))

    def _run(self) -> None:
        try:
            while not self._stop.wait(self.sampling_period_s):
                self._sample()
        except BaseException as exc:  # reported by stop(), never lost in the thread
            self._error = exc

    def start(self) -> None:
        self._samples = []
        self._stop.clear()
        self._error = None
        self._sample()
        self._thread = threading.Thread(target=self._run, name="power-sampler", daemon=True)
        self._thread.start()

    def stop(self, t0: float | None = None, t1: float | None = None) -> float:
        if self._thread is None:
            raise RuntimeError("SamplingMeter.stop() before start()")
        self._stop.set()
        self._thread.join()
        self._thread = None
        if self._error is not None:
            raise self._error
        self._sample()
        return trapezoid(self._samples, t0, t1)


def trapezoid(
    samples: list[tuple[float, float]], t0: float | None = None, t1: float | None = None
) -> float:
    """Integral of ``(time_s, power_w)`` samples by the trapezoidal rule, joules.

    With ``t0`` / ``t1`` the integral is clipped to that window, power being
    interpolated linearly at its ends: the sampler starts a little before the
    measured window and stops a little after it.
    """
    pts = sorted(samples)
    if len(pts) < 2:
        return 0.0
    lo = pts[0][0] if t0 is None else max(t0, pts[0][0])
    hi = pts[-1][0] if t1 is None else min(t1, pts[-1][0])
    if hi <= lo:
        return 0.0

    def at(t: float) -> float:
        for (ta, pa), (tb, pb) in itertools.pairwise(pts):
            if ta <= t <= tb:
                return pa if tb == ta else pa + (pb - pa) * (t - ta) / (tb - ta)
        return pts[-1][1]

    inner = [(t, p) for t, p in pts if lo < t < hi]
    clipped = [(lo, at(lo)), *inner, (hi, at(hi))]
    return sum((tb - ta) * (pa + pb) / 2.0 for (ta, pa), (tb, pb) in itertools.pairwise(clipped))
