"""GPU profiles: one schema, an NVML collector, a simulated GPU, readers and converters.

Modules
-------
schema      the profile table every producer writes and every family reads
device      the GPU interface the collector drives, energy meters, errors
nvml        a real GPU through pynvml (nvidia-ml-py)
fake_nvml   a replaying fake of pynvml with injected faults, for tests
simulated   a simulated GPU (PowerFlow 4.2 DVFS model, presets, seeded noise)
collector   sweeps over SM clocks / power limits that always restore the GPU
workloads   the built-in matmul loop and user callables ``module:function``
readers     Zeus power traces, CSV tables with one-line errors
zeusmonitor ZeusMonitor window logs (Zeus's JIT power-limit windows, any GPU count)
convert     profile -> Zeus power table (a profile becomes a family's instance in the
            family: ``energyopt.pipeline.from_profile``)
cli         ``energyopt profile``

Importing this package does not import pynvml; a GPU is needed only to profile one.
"""

import importlib
from typing import Any

#: Public names and the module that holds each. They are imported on first use
#: (PEP 562), so ``import energyopt.profiles`` (and ``energyopt --help``) does not
#: pay for pandas, the collector or the converters until they are needed.
_EXPORTS = {
    "collector": ("clock_grid", "measure", "power_limit_grid", "restored_settings", "sweep"),
    "convert": ("to_zeus_power_table",),
    "device": (
        "DeviceInfo",
        "GpuDevice",
        "GpuError",
        "GpuNotSupportedError",
        "GpuPermissionError",
        "GpuUnavailableError",
    ),
    "readers": ("read_zeus_power_trace",),
    "schema": ("COLUMNS", "KNOBS", "read_profile", "validate_profile", "write_profile"),
    "simulated": ("PRESETS", "WORKLOADS", "SimulatedGpu", "SimulatedWork"),
    "zeusmonitor": ("read_zeus_monitor_log",),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'energyopt.profiles' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"energyopt.profiles.{module}"), name)
    globals()[name] = value
    return value


__all__ = sorted(_MODULE_OF)
