"""``energyopt profile``: sweep a GPU's SM clock or power limit, or import a published profile.

Examples::

    energyopt profile --list-devices
    energyopt profile --device nvml:0 --knob sm_clock_mhz --workload matmul --out clocks.csv
    energyopt profile --device nvml:0 --knob power_limit_w --power-step 25 --out limits.csv
    energyopt profile --device nvml:0 --workload mylayer:STEPS --iterations 50 --out layer.csv
    energyopt profile --device simulated:a100 --workload transformer-layer --clock-count 9
    energyopt profile --import perseus --input gpt3-175b+a100_sxm_bf16.csv
    energyopt profile --import zeus-monitor --input A40+resnet50+gpu0.csv --out resnet50.csv
    energyopt profile power-limit A40+resnet50+gpu0.csv --selector zeus-cost:0.5 --json
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from energyopt.core.instance import InstanceError
from energyopt.core.paths import output_file
from energyopt.core.table import format_table
from energyopt.profiles.device import GpuDevice, GpuError
from energyopt.profiles.schema import KNOBS, write_profile

IMPORT_FORMATS = ("perseus", "zeus-trace", "zeus-monitor")


def register(sub: Any) -> None:
    p = sub.add_parser(
        "profile",
        help="profile a GPU (NVML or simulated) over SM clocks or power limits",
        description=(
            "Sweep the locked SM clock or the power limit of a GPU and measure time and "
            "energy per step of a workload; the GPU's clocks and power limit are restored "
            "on every exit, Ctrl-C included. Output: the profile schema (CSV, or Parquet "
            "with pyarrow) plus a <out>.meta.json sidecar."
        ),
    )
    p.add_argument(
        "--device",
        default="nvml:0",
        help="nvml:<index> (a real GPU) or simulated:<preset> with preset a100, v100, a40, "
        "h100 (default nvml:0)",
    )
    p.add_argument("--list-devices", action="store_true", help="describe the GPU(s) and exit")
    p.add_argument("--knob", choices=KNOBS, default="sm_clock_mhz", help="what to sweep")
    p.add_argument(
        "--values", default=None, help="comma-separated knob values (MHz or W); default: a grid"
    )
    p.add_argument("--clock-step", type=float, default=None, help="clock grid spacing, MHz")
    p.add_argument("--clock-count", type=int, default=None, help="number of clocks in the grid")
    p.add_argument("--power-step", type=float, default=25.0, help="power-limit grid spacing, W")
    p.add_argument(
        "--workload",
        default="matmul",
        help="matmul (built in; PyTorch or CuPy on a real GPU), transformer-layer "
        "(simulated only), or module:function (a step callable or {operation: callable})",
    )
    p.add_argument("--iterations", type=int, default=20, help="measured steps per setting")
    p.add_argument("--seconds", type=float, default=0.0, help="minimum seconds per setting")
    p.add_argument("--warmup", type=int, default=3, help="warm-up steps per setting")
    p.add_argument("--batch-size", type=int, default=0, help="recorded in the profile")
    p.add_argument("--stage", type=int, default=None, help="pipeline stage recorded in rows")
    p.add_argument(
        "--sampling-period",
        type=float,
        default=0.01,
        help="power-sampling period in s, used when the GPU has no energy counter",
    )
    p.add_argument("--seed", type=int, default=0, help="simulated GPU: noise seed")
    p.add_argument("--noise", type=float, default=0.01, help="simulated GPU: relative noise")
    p.add_argument(
        "--no-energy-counter",
        action="store_true",
        help="simulated GPU: behave like a GPU without an energy counter (power sampling)",
    )
    p.add_argument(
        "--import",
        dest="import_format",
        choices=IMPORT_FORMATS,
        default=None,
        help="convert a published file (given as --input) into the profile schema",
    )
    p.add_argument("--input", default=None, help="file to --import")
    p.add_argument("--out", "-o", default=None, help="output .csv or .parquet (default: stdout)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress lines")
    p.set_defaults(func=_profile)
    _register_power_limit(p)


def _register_power_limit(profile_parser: argparse.ArgumentParser) -> None:
    """``energyopt profile power-limit FILE``: the limit Zeus's selectors pick."""
    sub = profile_parser.add_subparsers(dest="profile_command", metavar="SUBCOMMAND")
    q = sub.add_parser(
        "power-limit",
        help="the power limit Zeus's selectors pick from a ZeusMonitor JIT profile",
        description=(
            "Read a ZeusMonitor log of Zeus's JIT power-limit optimizer "
            "(__GlobalPowerLimitOptimizer_<watts> windows, one job, 1 to N GPUs) and print "
            "the power limit (W) each selector picks, exactly as Zeus's own selectors do."
        ),
    )
    q.add_argument("file", help="the ZeusMonitor log (CSV)")
    q.add_argument(
        "--selector",
        action="append",
        default=None,
        help="energy, time, zeus-cost:ETA (0<=ETA<=1) or max-slowdown:FACTOR (>=1); "
        "repeatable (default zeus-cost:0.5, Zeus's default)",
    )
    q.add_argument("--json", action="store_true", help="one JSON object on stdout")
    q.set_defaults(func=_power_limit)


def _power_limit(args: argparse.Namespace) -> int:
    import json

    from energyopt.tuning.powerlimit import choice_table

    selectors = args.selector or ["zeus-cost:0.5"]
    table = choice_table(args.file, selectors)
    if args.json:
        print(json.dumps({"file": args.file, **table}))
        return 0
    for name, watts in table["choices"].items():
        print(f"{name}: {watts} W")
    return 0


def open_device(
    spec: str, *, seed: int = 0, noise: float = 0.01, counter: bool = True
) -> GpuDevice:
    """A device from ``nvml:<index>`` or ``simulated:<preset>``."""
    kind, _, arg = spec.partition(":")
    if kind == "nvml":
        from energyopt.profiles.nvml import NvmlDevice

        try:
            index = int(arg or 0)
        except ValueError:
            raise InstanceError(f"--device {spec!r}: the NVML index must be an integer") from None
        return NvmlDevice(index)
    if kind in ("simulated", "sim"):
        from energyopt.profiles.simulated import SimulatedGpu

        return SimulatedGpu(arg or "a100", seed=seed, noise=noise, has_energy_counter=counter)
    raise InstanceError(f"--device {spec!r}: expected nvml:<index> or simulated:<preset>")


def _profile(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except GpuError as exc:
        # one line saying what is needed, never a traceback
        print(f"energyopt profile: error: {exc}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    if args.out:  # before the sweep, so that a bad path costs no GPU time
        output_file(args.out, "profile")
    if args.import_format is not None:
        return _import(args)
    if args.list_devices:
        return _list(args)
    device = open_device(
        args.device, seed=args.seed, noise=args.noise, counter=not args.no_energy_counter
    )
    try:
        return _sweep(args, device)
    finally:
        device.close()


def _list(args: argparse.Namespace) -> int:
    if args.device.startswith("nvml"):
        from energyopt.profiles.nvml import list_devices

        infos = list_devices()
    else:
        infos = [open_device(args.device).info]
    for info in infos:
        print(info.describe())
    return 0


def _sweep(args: argparse.Namespace, device: GpuDevice) -> int:
    from energyopt.profiles.collector import clock_grid, power_limit_grid, sweep
    from energyopt.profiles.simulated import SimulatedGpu
    from energyopt.profiles.workloads import load_callable, matmul_workload

    if args.values:
        try:
            values = [float(v) for v in args.values.split(",") if v.strip()]
        except ValueError:
            raise InstanceError(
                f"--values {args.values!r}: expected numbers separated by commas"
            ) from None
    elif args.knob == "sm_clock_mhz":
        values = clock_grid(device, args.clock_step, args.clock_count)
    else:
        values = power_limit_grid(device, args.power_step)

    sync = None
    if isinstance(device, SimulatedGpu):
        if ":" in args.workload:
            raise InstanceError(
                f"--workload {args.workload!r}: a Python callable does no simulated GPU work; "
                "on a simulated GPU use matmul or transformer-layer"
            )
        steps = device.steps(args.workload)
    elif ":" in args.workload:
        wl = load_callable(args.workload)
        steps, sync = wl.steps, wl.synchronize
    elif args.workload == "matmul":
        wl = matmul_workload(device_index=device.info.index)
        steps, sync = wl.steps, wl.synchronize
    else:
        raise InstanceError(
            f"--workload {args.workload!r}: on a real GPU use matmul or module:function"
        )

    progress = None if args.quiet else (lambda line: print(line, file=sys.stderr))
    df = sweep(
        device,
        steps,
        args.knob,
        values,
        workload=args.workload,
        batch_size=args.batch_size,
        stage=args.stage,
        iterations=args.iterations,
        seconds=args.seconds,
        warmup=args.warmup,
        synchronize=sync,
        sampling_period_s=args.sampling_period,
        progress=progress,
    )
    _emit(df, args)
    return 0


def _import(args: argparse.Namespace) -> int:
    from energyopt.pipeline.readers import read_perseus_stage_profile
    from energyopt.profiles.readers import read_zeus_power_trace
    from energyopt.profiles.zeusmonitor import read_zeus_monitor_log

    if not args.input:
        raise InstanceError("--import needs --input FILE")
    if args.import_format == "perseus":
        df = read_perseus_stage_profile(args.input)
    elif args.import_format == "zeus-monitor":
        df = read_zeus_monitor_log(args.input)
    else:
        df = read_zeus_power_trace(args.input)
    _emit(df, args)
    return 0


def _emit(df: Any, args: argparse.Namespace) -> None:
    meta = df.attrs
    if args.out:
        path = write_profile(df, args.out)
        what = f"wrote {len(df)} rows to {path} (metadata in {path}.meta.json)"
    else:
        df.to_csv(sys.stdout, index=False)
        what = f"{len(df)} rows"
    if not args.quiet:
        lines = [f"{what}; source = {meta.get('source', '?')}"]
        if meta.get("energy_method"):
            period = meta.get("sampling_period_s")
            how = meta["energy_method"] + (f", sampling period {period:g} s" if period else "")
            lines.append(f"energy measured by {how}")
        print("\n".join(lines), file=sys.stderr)
        if args.out and len(df) <= 40:
            cols = ["knob_value", "operation", "time_s", "energy_j", "power_w"]
            cols = [c for c in cols if c in df.columns]
            print(format_table(cols, df[cols].itertuples(index=False)), file=sys.stderr)
