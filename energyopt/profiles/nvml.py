"""A real GPU through NVML (``pynvml`` as shipped by nvidia-ml-py).

Every NVML call goes through :meth:`NvmlDevice._call`, which turns an
``NVMLError`` into a one-line :class:`~energyopt.profiles.device.GpuError` saying
what is needed (root for settings, a driver for anything at all). The ``nvml``
argument takes any object with pynvml's function names: the tests pass the
replaying fake of :mod:`energyopt.profiles.fake_nvml`.

NVML units: power and power limits in milliwatts, energy in millijoules, clocks
in MHz. This module converts to watts and joules at its boundary.
"""

from __future__ import annotations

import importlib
import math
import time
from collections.abc import Callable
from typing import Any

from energyopt.profiles.device import (
    DeviceInfo,
    GpuDevice,
    GpuError,
    GpuNotSupportedError,
    GpuPermissionError,
    GpuUnavailableError,
)

# NVML return codes (nvml.h); pynvml exposes the same names.
NVML_ERROR_UNINITIALIZED = 1
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_NOT_FOUND = 6
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_DEVICE_MIG_ENABLE = 1


def load_pynvml() -> Any:
    """The ``pynvml`` module, or a one-line error naming the package to install."""
    try:
        return importlib.import_module("pynvml")
    except ImportError:
        raise GpuUnavailableError(
            "the pynvml module is missing: install the nvidia-ml-py package"
        ) from None


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class NvmlDevice(GpuDevice):
    """One NVIDIA GPU driven through NVML.

    Parameters
    ----------
    index
        NVML device index (as ``nvidia-smi`` numbers them).
    nvml
        A pynvml-like module; ``None`` imports ``pynvml``.
    clock
        Time source of the measured windows (``time.perf_counter``).
    """

    backend = "nvml"
    source = "nvml"

    def __init__(
        self,
        index: int = 0,
        nvml: Any | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.nvml = nvml if nvml is not None else load_pynvml()
        self.index = int(index)
        self._clock = clock
        self._name = f"GPU {self.index}"
        self._call("initializing NVML", self.nvml.nvmlInit)
        self._initialized = True
        count = self._call("counting GPUs", self.nvml.nvmlDeviceGetCount)
        if not 0 <= self.index < count:
            self.close()
            seen = f"indices 0..{count - 1}" if count else "no GPU at all"
            raise GpuUnavailableError(f"GPU index {self.index} does not exist: NVML sees {seen}")
        try:
            self.handle = self._call(
                "opening the GPU", self.nvml.nvmlDeviceGetHandleByIndex, self.index
            )
            self._info = self._discover()
        except BaseException:
            self.close()
            raise
        self._name = f"GPU {self.index} ({self._info.name})"

    # -- error translation ---------------------------------------------------------
    def _call(self, what: str, fn: Callable[..., Any], *args: Any, command: str = "") -> Any:
        """Call an NVML function; NVML errors become one-line :class:`GpuError`."""
        error_type = getattr(self.nvml, "NVMLError", None)
        try:
            return fn(*args)
        except Exception as exc:
            if error_type is None or not isinstance(exc, error_type):
                raise
            raise self._translate(what, exc, command) from None

    def _translate(self, what: str, exc: Any, command: str) -> GpuError:
        code = getattr(exc, "value", None)
        if code == NVML_ERROR_NO_PERMISSION:
            admin = f", or ask an administrator to run `{command}`" if command else ""
            return GpuPermissionError(
                f"{self._name}: {what} was refused (NVML_ERROR_NO_PERMISSION): it needs root "
                f"privileges: run as root or with sudo (in a container: --cap-add SYS_ADMIN)"
                f"{admin}"
            )
        if code in (NVML_ERROR_LIBRARY_NOT_FOUND, NVML_ERROR_DRIVER_NOT_LOADED):
            return GpuUnavailableError(
                f"no NVIDIA driver found ({exc}) while {what}: profile on a machine with an "
                f"NVIDIA GPU and its driver, or use --device simulated:<preset>"
            )
        if code == NVML_ERROR_NOT_SUPPORTED:
            return GpuNotSupportedError(f"{self._name}: {what} is not supported by this GPU")
        if code == NVML_ERROR_FUNCTION_NOT_FOUND:
            return GpuNotSupportedError(
                f"{self._name}: {what} needs a newer NVIDIA driver (NVML function not found)"
            )
        return GpuError(f"{self._name}: {what} failed: {exc} (NVML error {code})")

    # -- discovery -------------------------------------------------------------------
    def _discover(self) -> DeviceInfo:
        nv, h = self.nvml, self.handle
        name = _text(self._call("reading the name", nv.nvmlDeviceGetName, h))
        uuid = _text(self._call("reading the UUID", nv.nvmlDeviceGetUUID, h))
        driver = _text(self._call("reading the driver version", nv.nvmlSystemGetDriverVersion))
        clocks: tuple[int, ...] = ()
        try:
            mem = self._call("listing memory clocks", nv.nvmlDeviceGetSupportedMemoryClocks, h)
            # the SM clocks available depend on the memory clock; training runs at the
            # highest memory clock, so that is the list that matters
            sm = self._call(
                "listing SM clocks", nv.nvmlDeviceGetSupportedGraphicsClocks, h, max(mem)
            )
            clocks = tuple(sorted({int(c) for c in sm}, reverse=True))
        except GpuNotSupportedError:
            pass
        try:
            lo_mw, hi_mw = self._call(
                "reading the power-limit range", nv.nvmlDeviceGetPowerManagementLimitConstraints, h
            )
            default_mw = self._call(
                "reading the default power limit", nv.nvmlDeviceGetPowerManagementDefaultLimit, h
            )
        except GpuNotSupportedError:
            # some GPUs do not expose power management: clock sweeps still work
            lo_mw = hi_mw = default_mw = math.nan
        try:
            self._call("reading the energy counter", nv.nvmlDeviceGetTotalEnergyConsumption, h)
            has_counter = True
        except GpuNotSupportedError:
            has_counter = False
        try:
            current, _pending = self._call("reading the MIG mode", nv.nvmlDeviceGetMigMode, h)
            mig: bool | None = int(current) == NVML_DEVICE_MIG_ENABLE
        except GpuNotSupportedError:
            mig = None
        return DeviceInfo(
            index=self.index,
            name=name,
            uuid=uuid,
            driver_version=driver,
            supported_sm_clocks_mhz=clocks,
            power_limit_min_w=lo_mw / 1000.0,
            power_limit_max_w=hi_mw / 1000.0,
            default_power_limit_w=default_mw / 1000.0,
            has_energy_counter=has_counter,
            mig_enabled=mig,
            backend=self.backend,
        )

    @property
    def info(self) -> DeviceInfo:
        return self._info

    # -- the GpuDevice operations ------------------------------------------------------
    def now(self) -> float:
        return self._clock()

    def lock_sm_clock(self, mhz: int) -> None:
        self._call(
            f"locking the SM clock at {mhz} MHz",
            self.nvml.nvmlDeviceSetGpuLockedClocks,
            self.handle,
            int(mhz),
            int(mhz),
            command=f"nvidia-smi -i {self.index} -lgc {mhz},{mhz}",
        )

    def reset_sm_clock(self) -> None:
        self._call(
            "resetting the locked SM clock",
            self.nvml.nvmlDeviceResetGpuLockedClocks,
            self.handle,
            command=f"nvidia-smi -i {self.index} -rgc",
        )

    def power_limit_w(self) -> float:
        mw = self._call(
            "reading the power limit", self.nvml.nvmlDeviceGetPowerManagementLimit, self.handle
        )
        return mw / 1000.0

    def set_power_limit_w(self, watts: float) -> None:
        self._call(
            f"setting the power limit to {watts:g} W",
            self.nvml.nvmlDeviceSetPowerManagementLimit,
            self.handle,
            round(watts * 1000),
            command=f"nvidia-smi -i {self.index} -pl {watts:g}",
        )

    def power_w(self) -> float:
        mw = self._call("reading the power", self.nvml.nvmlDeviceGetPowerUsage, self.handle)
        return mw / 1000.0

    def energy_counter_mj(self) -> int:
        return int(
            self._call(
                "reading the energy counter",
                self.nvml.nvmlDeviceGetTotalEnergyConsumption,
                self.handle,
            )
        )

    def close(self) -> None:
        if getattr(self, "_initialized", False):
            self._initialized = False
            try:
                self.nvml.nvmlShutdown()
            except Exception:  # shutting down must never mask the real error
                pass

    def __enter__(self) -> NvmlDevice:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def list_devices(nvml: Any | None = None) -> list[DeviceInfo]:
    """Discovery of every GPU NVML sees (an empty list is never returned silently)."""
    probe = NvmlDevice(0, nvml)
    try:
        count = probe._call("counting GPUs", probe.nvml.nvmlDeviceGetCount)
    finally:
        probe.close()
    infos = []
    for i in range(count):
        dev = NvmlDevice(i, nvml)
        try:
            infos.append(dev.info)
        finally:
            dev.close()
    return infos
