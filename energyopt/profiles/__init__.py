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
readers     Perseus stage profiles, Zeus power traces, ZeusMonitor logs
convert     profile -> PEM option tables / instance, profile -> Zeus power table
cli         ``energyopt profile``

Importing this package does not import pynvml; a GPU is needed only to profile one.
"""

from energyopt.profiles.collector import (
    clock_grid,
    measure,
    power_limit_grid,
    restored_settings,
    sweep,
)
from energyopt.profiles.convert import to_option_tables, to_pem_instance, to_zeus_power_table
from energyopt.profiles.device import (
    DeviceInfo,
    GpuDevice,
    GpuError,
    GpuNotSupportedError,
    GpuPermissionError,
    GpuUnavailableError,
)
from energyopt.profiles.readers import (
    read_perseus_stage_profile,
    read_zeus_monitor_log,
    read_zeus_power_trace,
)
from energyopt.profiles.schema import (
    COLUMNS,
    KNOBS,
    read_profile,
    validate_profile,
    write_profile,
)
from energyopt.profiles.simulated import PRESETS, WORKLOADS, SimulatedGpu, SimulatedWork

__all__ = [
    "COLUMNS",
    "KNOBS",
    "PRESETS",
    "WORKLOADS",
    "DeviceInfo",
    "GpuDevice",
    "GpuError",
    "GpuNotSupportedError",
    "GpuPermissionError",
    "GpuUnavailableError",
    "SimulatedGpu",
    "SimulatedWork",
    "clock_grid",
    "measure",
    "power_limit_grid",
    "read_perseus_stage_profile",
    "read_profile",
    "read_zeus_monitor_log",
    "read_zeus_power_trace",
    "restored_settings",
    "sweep",
    "to_option_tables",
    "to_pem_instance",
    "to_zeus_power_table",
    "validate_profile",
    "write_profile",
]
