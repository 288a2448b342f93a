"""A replaying fake of ``pynvml`` for hardware-free tests, with injected faults.

:class:`FakeNvml` has the pynvml function names the collector uses and keeps the
state a real GPU would (locked clocks, power limit), so a test can check that a
sweep restored it. Readings are *replayed*: a :class:`FakeGpu` takes the
energy-counter values (mJ) and power readings (mW) a real GPU produced, as a
sequence returned one per call, or as a function of the fake's state (its
virtual time, locked clock and power limit) for longer runs. A GPU without an
energy counter is ``energy_mj=None``: the counter call then fails with
``NVML_ERROR_NOT_SUPPORTED`` exactly as on a pre-Volta GPU.

Faults are injected per function name (:meth:`FakeNvml.inject`): an NVML error
code (raised as the genuine ``pynvml.NVMLError`` subclass) or any exception,
``KeyboardInterrupt`` included, on the n-th call.

Example
-------
>>> fake = FakeNvml([FakeGpu(energy_mj=[0, 1000, 2500])])
>>> fake.inject("nvmlDeviceSetGpuLockedClocks", NVML_ERROR_NO_PERMISSION)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from energyopt.profiles.nvml import (
    NVML_DEVICE_MIG_ENABLE,
    NVML_ERROR_DRIVER_NOT_LOADED,
    NVML_ERROR_INVALID_ARGUMENT,
    NVML_ERROR_LIBRARY_NOT_FOUND,
    NVML_ERROR_NO_PERMISSION,
    NVML_ERROR_NOT_SUPPORTED,
    NVML_ERROR_UNINITIALIZED,
    load_pynvml,
)

__all__ = [
    "NVML_ERROR_DRIVER_NOT_LOADED",
    "NVML_ERROR_LIBRARY_NOT_FOUND",
    "NVML_ERROR_NOT_SUPPORTED",
    "NVML_ERROR_NO_PERMISSION",
    "FakeGpu",
    "FakeNvml",
]

Reading = Sequence[float] | Callable[["FakeGpu"], float] | float | None


@dataclasses.dataclass
class FakeGpu:
    """One fake GPU: its fixed properties, its readings, and its mutable state.

    Clocks default to an A100-SXM4's 210-1410 MHz in 15 MHz steps and the power
    limit to its 100-400 W range.
    """

    name: str = "NVIDIA A100-SXM4-40GB"
    uuid: str = "GPU-00000000-fake-0000-0000-000000000000"
    sm_clocks_mhz: tuple[int, ...] = tuple(range(1410, 209, -15))
    memory_clocks_mhz: tuple[int, ...] = (1215,)
    power_limit_range_mw: tuple[int, int] = (100_000, 400_000)
    default_power_limit_mw: int = 400_000
    energy_mj: Reading = 0.0
    power_mw: Reading = 250_000.0
    mig_mode: int | None = None
    # state a sweep changes (and must restore)
    locked_clocks_mhz: tuple[int, int] | None = None
    power_limit_mw: int | None = None
    time_s: float = 0.0
    _energy_pos: int = 0
    _power_pos: int = 0

    def __post_init__(self) -> None:
        if self.power_limit_mw is None:
            self.power_limit_mw = self.default_power_limit_mw

    @staticmethod
    def _replay(reading: Reading, state: FakeGpu, pos: int) -> tuple[float, int]:
        if callable(reading):
            return float(reading(state)), pos
        if isinstance(reading, (int, float)):
            return float(reading), pos
        assert reading is not None
        if pos >= len(reading):
            raise AssertionError(
                f"FakeGpu: the replayed trace has {len(reading)} readings; call {pos + 1} "
                "asked for one more (the test recorded too few)"
            )
        return float(reading[pos]), pos + 1


class FakeNvml:
    """A pynvml stand-in over a list of :class:`FakeGpu` (see the module docstring).

    ``calls`` logs every function called, with its arguments.
    """

    NVML_DEVICE_MIG_ENABLE = NVML_DEVICE_MIG_ENABLE

    def __init__(self, gpus: Sequence[FakeGpu] | None = None, driver: str = "550.54.15") -> None:
        pynvml = load_pynvml()
        self.NVMLError = pynvml.NVMLError
        self._make_error = pynvml.NVMLError
        self.gpus = list(gpus) if gpus is not None else [FakeGpu()]
        self.driver = driver
        self.initialized = 0
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self._counts: dict[str, int] = {}
        self._faults: dict[str, list[tuple[int, Any]]] = {}

    # -- test controls -------------------------------------------------------------
    def inject(
        self,
        function: str,
        fault: BaseException | int | Callable[[], Any],
        *,
        on_call: int = 1,
        times: int = 1,
    ) -> None:
        """Make calls ``on_call .. on_call + times - 1`` of ``function`` raise ``fault``.

        ``fault`` is an NVML return code (raised as ``pynvml.NVMLError(code)``), an
        exception instance, or a zero-argument callable run before the call
        proceeds normally (a side effect such as a signal). Calls are counted from
        the fake's creation.
        """
        for k in range(times):
            self._faults.setdefault(function, []).append((on_call + k, fault))

    def advance(self, seconds: float, index: int = 0) -> None:
        """Move a GPU's virtual time forward (as if work ran for ``seconds``)."""
        self.gpus[index].time_s += seconds

    def count(self, function: str) -> int:
        return self._counts.get(function, 0)

    # -- plumbing ------------------------------------------------------------------
    def _enter(self, function: str, *args: Any, needs_init: bool = True) -> None:
        self.calls.append((function, args))
        n = self._counts[function] = self._counts.get(function, 0) + 1
        for on_call, fault in self._faults.get(function, []):
            if on_call == n:
                if isinstance(fault, BaseException):
                    raise fault
                if callable(fault):  # a side effect, e.g. a signal arriving mid-call
                    fault()
                    continue
                raise self._make_error(fault)
        if needs_init and not self.initialized:
            raise self._make_error(NVML_ERROR_UNINITIALIZED)

    def _gpu(self, handle: Any) -> FakeGpu:
        if not isinstance(handle, _Handle) or handle.owner is not self:
            raise self._make_error(NVML_ERROR_INVALID_ARGUMENT)
        return self.gpus[handle.index]

    # -- the pynvml functions ----------------------------------------------------------
    def nvmlInit(self) -> None:
        self._enter("nvmlInit", needs_init=False)
        self.initialized += 1

    def nvmlShutdown(self) -> None:
        self._enter("nvmlShutdown")
        self.initialized -= 1

    def nvmlSystemGetDriverVersion(self) -> str:
        self._enter("nvmlSystemGetDriverVersion")
        return self.driver

    def nvmlDeviceGetCount(self) -> int:
        self._enter("nvmlDeviceGetCount")
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> _Handle:
        self._enter("nvmlDeviceGetHandleByIndex", index)
        if not 0 <= index < len(self.gpus):
            raise self._make_error(NVML_ERROR_INVALID_ARGUMENT)
        return _Handle(self, index)

    def nvmlDeviceGetName(self, handle: Any) -> str:
        self._enter("nvmlDeviceGetName", handle)
        return self._gpu(handle).name

    def nvmlDeviceGetUUID(self, handle: Any) -> str:
        self._enter("nvmlDeviceGetUUID", handle)
        return self._gpu(handle).uuid

    def nvmlDeviceGetSupportedMemoryClocks(self, handle: Any) -> list[int]:
        self._enter("nvmlDeviceGetSupportedMemoryClocks", handle)
        return list(self._gpu(handle).memory_clocks_mhz)

    def nvmlDeviceGetSupportedGraphicsClocks(self, handle: Any, mem_mhz: int) -> list[int]:
        self._enter("nvmlDeviceGetSupportedGraphicsClocks", handle, mem_mhz)
        gpu = self._gpu(handle)
        if mem_mhz not in gpu.memory_clocks_mhz:
            raise self._make_error(NVML_ERROR_INVALID_ARGUMENT)
        return list(gpu.sm_clocks_mhz)

    def nvmlDeviceGetPowerManagementLimitConstraints(self, handle: Any) -> list[int]:
        self._enter("nvmlDeviceGetPowerManagementLimitConstraints", handle)
        return list(self._gpu(handle).power_limit_range_mw)

    def nvmlDeviceGetPowerManagementDefaultLimit(self, handle: Any) -> int:
        self._enter("nvmlDeviceGetPowerManagementDefaultLimit", handle)
        return self._gpu(handle).default_power_limit_mw

    def nvmlDeviceGetPowerManagementLimit(self, handle: Any) -> int:
        self._enter("nvmlDeviceGetPowerManagementLimit", handle)
        limit = self._gpu(handle).power_limit_mw
        assert limit is not None
        return limit

    def nvmlDeviceSetPowerManagementLimit(self, handle: Any, limit_mw: int) -> None:
        self._enter("nvmlDeviceSetPowerManagementLimit", handle, limit_mw)
        gpu = self._gpu(handle)
        lo, hi = gpu.power_limit_range_mw
        if not lo <= limit_mw <= hi:
            raise self._make_error(NVML_ERROR_INVALID_ARGUMENT)
        gpu.power_limit_mw = int(limit_mw)

    def nvmlDeviceSetGpuLockedClocks(self, handle: Any, lo_mhz: int, hi_mhz: int) -> None:
        self._enter("nvmlDeviceSetGpuLockedClocks", handle, lo_mhz, hi_mhz)
        gpu = self._gpu(handle)
        if gpu.mig_mode == NVML_DEVICE_MIG_ENABLE:
            raise self._make_error(NVML_ERROR_NOT_SUPPORTED)
        gpu.locked_clocks_mhz = (int(lo_mhz), int(hi_mhz))

    def nvmlDeviceResetGpuLockedClocks(self, handle: Any) -> None:
        self._enter("nvmlDeviceResetGpuLockedClocks", handle)
        self._gpu(handle).locked_clocks_mhz = None

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: Any) -> int:
        self._enter("nvmlDeviceGetTotalEnergyConsumption", handle)
        gpu = self._gpu(handle)
        if gpu.energy_mj is None:
            raise self._make_error(NVML_ERROR_NOT_SUPPORTED)
        value, gpu._energy_pos = FakeGpu._replay(gpu.energy_mj, gpu, gpu._energy_pos)
        return int(value)

    def nvmlDeviceGetPowerUsage(self, handle: Any) -> int:
        self._enter("nvmlDeviceGetPowerUsage", handle)
        gpu = self._gpu(handle)
        value, gpu._power_pos = FakeGpu._replay(gpu.power_mw, gpu, gpu._power_pos)
        return int(value)

    def nvmlDeviceGetMigMode(self, handle: Any) -> list[int]:
        self._enter("nvmlDeviceGetMigMode", handle)
        gpu = self._gpu(handle)
        if gpu.mig_mode is None:
            raise self._make_error(NVML_ERROR_NOT_SUPPORTED)
        return [gpu.mig_mode, gpu.mig_mode]


@dataclasses.dataclass(frozen=True)
class _Handle:
    owner: FakeNvml
    index: int
