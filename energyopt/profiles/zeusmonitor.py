"""ZeusMonitor window logs (``start_time,window_name,elapsed_time,gpu<i>_energy...``).

``zeus.monitor.ZeusMonitor(log_file=...)`` writes one header line
``start_time,window_name,elapsed_time,gpu<i>_energy,...`` (one energy column per
monitored GPU, named by the GPU's index, in joules) and one line per measurement
window that ended (cancelled windows are not written). Zeus's JIT power-limit
optimizer (``GlobalPowerLimitOptimizer``) names its windows
``__GlobalPowerLimitOptimizer_<watts>`` (``__PowerLimitOptimizer_<watts>`` in later
Zeus releases): one window per power limit it profiled, from the highest limit down
in a uniform step. Each such file is one job on one or more GPUs.

:func:`read_zeus_monitor_log` reads those windows without any per-file pattern: the
knob is the power limit in watts, one profile row per limit, energy summed over the
GPUs. Logs of other windows (a user's own ``begin_window``/``end_window``) are read
when the caller says how a window name gives the knob setting (``window_pattern``) or
gives the one setting of the whole log (``knob_value``).

Energy columns are matched case-insensitively (``GPU1_ENERGY`` counts as GPU 1): a
column is never dropped from the total without a word.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pandas as pd

from energyopt.core import validate as V
from energyopt.core.instance import InstanceError
from energyopt.profiles.readers import MAX_ROWS, read_csv_table
from energyopt.profiles.schema import KNOBS, profile_row, validate_profile

ZEUS_MONITOR_COLUMNS = ("start_time", "window_name", "elapsed_time")
#: Window names of Zeus's JIT power-limit optimizer; the group is the limit in watts.
JIT_WINDOW = re.compile(r"__(?:Global)?PowerLimitOptimizer_(?P<watts>.*)")
#: Operation name of the rows read from JIT windows.
JIT_OPERATION = "power-limit-window"
#: Largest power limit accepted (W): more than any GPU board; a typo, not a GPU.
MAX_POWER_LIMIT_W = 100_000
_ENERGY_COLUMN = re.compile(r"gpu(\d+)_energy", re.IGNORECASE)
#: ``<GPU>+<model>+gpu<ids>.csv``, the naming of Zeus's own test profiles.
_FILE_NAME = re.compile(r"(?P<gpu>[^+]+)\+(?P<workload>.+)\+gpu[\d,]+")


def read_zeus_monitor_log(
    path: str | Path,
    *,
    gpu: str | None = None,
    knob: str | None = None,
    knob_value: float | None = None,
    window_pattern: str | None = None,
    workload: str | None = None,
    batch_size: int = 0,
) -> pd.DataFrame:
    """A ZeusMonitor log as a profile (one row per knob setting and operation).

    Parameters
    ----------
    path
        The log file.
    gpu, workload
        Recorded in every row. Default: read from a file named like Zeus's test
        profiles, ``<GPU>+<model>+gpu<ids>.csv`` (``A40+resnet50+gpu0,1,2,3.csv``),
        else ``"unknown"`` and ``"custom"``.
    knob
        ``power_limit_w`` or ``sm_clock_mhz``. Default: ``power_limit_w`` for Zeus's
        JIT windows, ``sm_clock_mhz`` otherwise.
    knob_value, window_pattern
        Give neither to read the JIT power-limit optimizer's windows
        (``__GlobalPowerLimitOptimizer_<watts>``): each limit must appear exactly
        once, the limits must form a uniform grid (none missing), and other
        windows are left out (their count is in ``attrs["other_windows"]``). Give
        ``knob_value`` (the one setting of the whole log) or ``window_pattern`` (a
        regular expression with a named group ``knob_value`` and optionally
        ``operation``, matched against each window name) to read any other log;
        then the windows of each (operation, setting) are averaged.
    batch_size
        Recorded in every row (the log does not say).

    Returns
    -------
    pandas.DataFrame
        A validated profile; ``num_gpus`` is the number of energy columns and
        ``energy_j`` the window's energy summed over them. ``attrs`` has
        ``source = "zeus-monitor"``, ``file``, ``gpu``, ``gpu_indices`` and
        ``num_gpus``.

    Raises
    ------
    InstanceError
        One line naming the file, the line and the field: a missing column, no
        or a repeated energy column, a non-numeric or negative value, a repeated
        or missing JIT window, a window name that does not match.
    """
    path = Path(path)
    if knob_value is not None:  # strict: a bool or a string is no setting
        knob_value = V.positive("knob_value", knob_value)
    batch_size = V.integer("batch_size", batch_size, minimum=0)
    named = _FILE_NAME.fullmatch(path.stem)
    gpu = gpu if gpu is not None else (named["gpu"] if named else "unknown")
    workload = workload if workload is not None else (named["workload"] if named else "custom")
    jit = knob_value is None and window_pattern is None
    knob = knob if knob is not None else ("power_limit_w" if jit else "sm_clock_mhz")
    pattern = _window_pattern(path, knob, knob_value, window_pattern, jit)
    df = read_csv_table(path, ZEUS_MONITOR_COLUMNS, max_rows=MAX_ROWS)
    energy_cols = energy_columns(path, df)
    windows = (
        _jit_windows(path, df, energy_cols)
        if jit
        else _named_windows(path, df, energy_cols, knob_value, pattern)
    )
    out = _as_profile(path, windows, gpu, knob, workload, batch_size, energy_cols)
    out.attrs["other_windows"] = len(df) - sum(len(w) for w in windows.values())
    return out


def _as_profile(
    path: Path,
    windows: dict[tuple[str, float], list[tuple[float, float]]],
    gpu: str,
    knob: str,
    workload: str,
    batch_size: int,
    energy_cols: list[str],
) -> pd.DataFrame:
    """One validated profile row per (operation, setting): its windows' mean time and energy."""
    rows = [
        profile_row(
            gpu=gpu,
            knob=knob,
            knob_value=value,
            workload=workload,
            operation=op,
            batch_size=int(batch_size),
            time_s=sum(w[0] for w in ws) / len(ws),
            energy_j=sum(w[1] for w in ws) / len(ws),
            samples=len(ws),
            source="zeus-monitor",
            num_gpus=len(energy_cols),
        )
        for (op, value), ws in windows.items()
    ]
    out = validate_profile(pd.DataFrame(rows), str(path))
    out.attrs.update(
        {
            "source": "zeus-monitor",
            "file": path.name,
            "gpu": gpu,
            "gpu_indices": [int(_ENERGY_COLUMN.fullmatch(c)[1]) for c in energy_cols],
            "num_gpus": len(energy_cols),
        }
    )
    return out


def energy_columns(path: Path, df: pd.DataFrame) -> list[str]:
    """The log's ``gpu<i>_energy`` columns (any letter case) in GPU order; at least one.

    Two columns of the same GPU (``gpu1_energy`` and ``GPU1_ENERGY``) are an error:
    which one to count cannot be guessed.
    """
    by_index: dict[int, str] = {}
    for c in df.columns:
        m = _ENERGY_COLUMN.fullmatch(str(c).strip())
        if m is None:
            continue
        i = int(m[1])
        if i in by_index:
            raise InstanceError(
                f"{path}: columns {by_index[i]!r} and {str(c)!r} are both the energy of GPU {i}"
            )
        by_index[i] = str(c)
    if not by_index:
        raise InstanceError(
            f"{path}: missing column gpu<i>_energy (one per GPU; found {V.first_few(df.columns)})"
        )
    return [by_index[i] for i in sorted(by_index)]


def _cell(path: Path, df: pd.DataFrame, idx: int, field: str, *, positive: bool) -> float:
    """A numeric cell, with the file and line in the error."""
    try:
        value = V.csv_cell(df.at[idx, field])
        return V.positive(field, value) if positive else V.nonneg(field, value)
    except InstanceError as exc:
        raise InstanceError(f"{path}, line {idx + 2}: {exc}") from None


def _window(path: Path, df: pd.DataFrame, idx: int, energy_cols: list[str]) -> tuple[float, float]:
    """(elapsed seconds, joules summed over the GPUs) of line ``idx``."""
    t = _cell(path, df, idx, "elapsed_time", positive=True)
    _cell(path, df, idx, "start_time", positive=False)
    return t, sum(_cell(path, df, idx, c, positive=False) for c in energy_cols)


def _jit_windows(
    path: Path, df: pd.DataFrame, energy_cols: list[str]
) -> dict[tuple[str, float], list[tuple[float, float]]]:
    """The JIT optimizer's windows, in file order, each limit once, none missing."""
    out: dict[tuple[str, float], list[tuple[float, float]]] = {}
    line_of: dict[int, int] = {}
    for idx in df.index:
        name = str(df.at[idx, "window_name"]).strip()
        m = JIT_WINDOW.fullmatch(name)
        if m is None:
            continue
        raw = m["watts"]
        if not re.fullmatch(r"\d{1,7}", raw) or not 0 < int(raw) <= MAX_POWER_LIMIT_W:
            raise InstanceError(
                f"{path}, line {idx + 2}: window_name = {V.shown(name)}: the power limit "
                f"must be a whole number of watts in 1..{MAX_POWER_LIMIT_W}"
            )
        watts = int(raw)
        if watts in line_of:
            raise InstanceError(
                f"{path}, line {idx + 2}: window_name = {V.shown(name)}: a second window "
                f"for {watts} W (the first is on line {line_of[watts]})"
            )
        line_of[watts] = idx + 2
        out[(JIT_OPERATION, float(watts))] = [_window(path, df, idx, energy_cols)]
    if not out:
        raise InstanceError(
            f"{path}: window_name: no __GlobalPowerLimitOptimizer_<watts> window; for other "
            "windows give window_pattern or knob_value"
        )
    _check_grid(path, sorted(line_of))
    return out


def _check_grid(path: Path, limits: list[int]) -> None:
    """Zeus profiles limits from the highest down in one step: a gap is a missing window."""
    if len(limits) < 3:
        return
    step = min(b - a for a, b in itertools.pairwise(limits))
    for a, b in itertools.pairwise(limits):
        if b - a != step:
            missing = a + step
            raise InstanceError(
                f"{path}: window_name: no window for {missing} W: the limits "
                f"{V.first_few(limits)} go in steps of {step} W, and {a} W is followed by {b} W"
            )


def _named_windows(
    path: Path,
    df: pd.DataFrame,
    energy_cols: list[str],
    knob_value: float | None,
    pattern: re.Pattern[str] | None,
) -> dict[tuple[str, float], list[tuple[float, float]]]:
    """Every window, grouped by (operation, knob value) in order of first appearance."""
    out: dict[tuple[str, float], list[tuple[float, float]]] = {}
    for idx in df.index:
        name = str(df.at[idx, "window_name"])
        if pattern is None:
            assert knob_value is not None
            op, value = name, float(knob_value)
        else:
            op, value = _parse_window_name(path, idx, name, pattern)
        out.setdefault((op, value), []).append(_window(path, df, idx, energy_cols))
    return out


def _window_pattern(
    path: Path, knob: str, knob_value: float | None, window_pattern: str | None, jit: bool
) -> re.Pattern[str] | None:
    """Check the knob and the knob's source; the compiled ``window_pattern``."""
    if knob not in KNOBS:
        raise InstanceError(f"knob = {knob!r}: expected one of {', '.join(KNOBS)}")
    if jit:
        if knob != "power_limit_w":
            raise InstanceError(
                f"{path}: knob = {knob!r}: Zeus's JIT windows set the power limit "
                "(power_limit_w); for other windows give window_pattern or knob_value"
            )
        return None
    if knob_value is not None and window_pattern is not None:
        raise InstanceError(f"{path}: give knob_value or window_pattern, not both")
    if window_pattern is None:
        return None
    try:
        pattern = re.compile(window_pattern)
    except re.error as exc:
        raise InstanceError(f"window_pattern = {window_pattern!r}: {exc}") from None
    if "knob_value" not in pattern.groupindex:
        raise InstanceError(
            f"window_pattern = {window_pattern!r}: needs a named group (?P<knob_value>...)"
        )
    return pattern


def _parse_window_name(
    path: Path, idx: int, name: str, pattern: re.Pattern[str]
) -> tuple[str, float]:
    """(operation, knob value) from a window name; the operation defaults to the name."""
    m = pattern.fullmatch(name)
    if m is None:
        raise InstanceError(
            f"{path}, line {idx + 2}: window_name = {V.shown(name)} does not match "
            f"window_pattern {pattern.pattern!r}"
        )
    try:
        value = V.positive("knob_value", V.csv_cell(m.group("knob_value")))
    except InstanceError:
        raise InstanceError(
            f"{path}, line {idx + 2}: window_name = {V.shown(name)}: knob value "
            f"{m.group('knob_value')!r} is not a positive number"
        ) from None
    op = name
    if "operation" in pattern.groupindex and m.group("operation"):
        op = m.group("operation")
    return op, value
