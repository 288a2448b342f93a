"""Readers of published measurement formats into the profile schema.

- Perseus stage profiles (SOSP'24 artifact) are read by the pipeline family
  (:func:`energyopt.pipeline.readers.read_perseus_stage_profile`): their stages and
  forward/backward computations are PEM's.
- Zeus power traces (NSDI'23, ``summary_power_<gpu>.csv``):
  ``dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power``.
- ZeusMonitor window logs: ``start_time,window_name,elapsed_time,gpu0_energy[,gpu1_energy...]``.

Each returns a validated profile (:func:`energyopt.profiles.schema.validate_profile`)
with ``source`` naming the format. Bad input raises
:class:`~energyopt.core.instance.InstanceError` naming the file, the line and
the field.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd

from energyopt.core import validate as V
from energyopt.core.instance import InstanceError
from energyopt.profiles.schema import KNOBS, profile_row, validate_profile

ZEUS_POWER_COLUMNS = (
    "dataset",
    "network",
    "batch_size",
    "optimizer",
    "power_limit",
    "time_per_epoch",
    "average_power",
)
ZEUS_MONITOR_COLUMNS = ("start_time", "window_name", "elapsed_time")


#: The most rows read from one trace or log (the published Zeus traces have ~2,000).
MAX_ROWS = 1_000_000


def read_csv_table(path: Path, expected: tuple[str, ...], *, max_rows: int) -> pd.DataFrame:
    """A CSV file with at least the ``expected`` columns and one row; one-line errors."""
    try:
        df = pd.read_csv(path, nrows=max_rows + 1)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise InstanceError(f"{path}: cannot read as CSV: {V.one_line(exc)}") from None
    except (ValueError, OverflowError, MemoryError) as exc:
        raise InstanceError(f"{path}: cannot read as CSV: {V.one_line(exc)}") from None
    V.columns(str(path), list(df.columns), expected)
    if df.empty:
        raise InstanceError(f"{path}: no rows")
    if len(df) > max_rows:
        raise InstanceError(f"{path}: more than {max_rows} rows")
    return df


def _read_csv(path: Path, expected: tuple[str, ...]) -> pd.DataFrame:
    return read_csv_table(path, expected, max_rows=MAX_ROWS)


def _number(path: Path, df: pd.DataFrame, idx: int, field: str, positive: bool = False) -> float:
    raw = df.at[idx, field]
    try:
        if positive:
            return V.positive(field, V.csv_cell(raw))
        return V.nonneg(field, V.csv_cell(raw))
    except InstanceError as exc:
        raise InstanceError(f"{path}, line {idx + 2}: {exc}") from None


def read_zeus_power_trace(path: str | Path, *, gpu: str | None = None) -> pd.DataFrame:
    """A Zeus power trace (``summary_power_<gpu>.csv``) as a profile.

    One row per (workload, batch size, optimizer, power limit): knob
    ``power_limit_w``, operation ``epoch``, ``time_s = time_per_epoch``,
    ``energy_j = average_power * time_per_epoch`` (the trace's own definition of
    epoch energy). ``workload`` is ``dataset/network``; the optimizer is kept
    in an ``optimizer`` column so :func:`energyopt.profiles.convert.to_zeus_power_table`
    can write the trace back. ``gpu`` defaults to the ``<gpu>`` of the file name.
    """
    path = Path(path)
    df = _read_csv(path, ZEUS_POWER_COLUMNS)
    name = gpu or re.sub(r"^summary_power_", "", path.stem)
    rows = []
    for idx in df.index:
        t = _number(path, df, idx, "time_per_epoch", positive=True)
        p = _number(path, df, idx, "average_power")
        pl = _number(path, df, idx, "power_limit", positive=True)
        try:
            bs = V.integer("batch_size", V.csv_cell(df.at[idx, "batch_size"]), minimum=1)
        except InstanceError as exc:
            raise InstanceError(f"{path}, line {idx + 2}: {exc}") from None
        rows.append(
            profile_row(
                gpu=name,
                knob="power_limit_w",
                knob_value=pl,
                workload=f"{df.at[idx, 'dataset']}/{df.at[idx, 'network']}",
                operation="epoch",
                batch_size=int(bs),
                time_s=t,
                energy_j=p * t,
                samples=1,
                source="zeus-trace",
                power_w=p,
                optimizer=str(df.at[idx, "optimizer"]),
            )
        )
    dup = pd.DataFrame(rows).duplicated(["workload", "batch_size", "optimizer", "knob_value"])
    if dup.any():
        first = int(dup.idxmax())
        raise InstanceError(
            f"{path}, line {first + 2}: (dataset, network, batch_size, optimizer, power_limit) "
            "repeats an earlier row"
        )
    out = validate_profile(pd.DataFrame(rows), str(path))
    out.attrs.update({"source": "zeus-trace", "file": path.name, "gpu": name})
    return out


def read_zeus_monitor_log(
    path: str | Path,
    *,
    gpu: str,
    knob: str = "sm_clock_mhz",
    knob_value: float | None = None,
    window_pattern: str | None = None,
    workload: str = "custom",
    batch_size: int = 0,
) -> pd.DataFrame:
    """ZeusMonitor window logs as a profile, averaging the windows of each name.

    The log has columns ``start_time,window_name,elapsed_time`` and one
    ``gpu<i>_energy`` column (joules) per monitored GPU; the energies of a row
    are summed over the GPUs (``num_gpus`` records how many). The log does not
    record the knob setting: give it as ``knob_value``, or give
    ``window_pattern``, a regular expression with named groups ``knob_value``
    and optionally ``operation`` matched against each window name (e.g.
    ``r"(?P<operation>\\w+)@(?P<knob_value>\\d+)"`` for ``forward@1410``). The
    operation defaults to the window name.
    """
    path = Path(path)
    pattern = _window_pattern(path, knob, knob_value, window_pattern)
    df = _read_csv(path, ZEUS_MONITOR_COLUMNS)
    energy_cols = _energy_columns(path, df)
    groups: dict[tuple[str, float], list[tuple[float, float]]] = {}
    for idx in df.index:
        name = str(df.at[idx, "window_name"])
        t = _number(path, df, idx, "elapsed_time")
        e = sum(_number(path, df, idx, c) for c in energy_cols)
        if pattern is None:
            op, value = name, knob_value
        else:
            op, value = _parse_window_name(path, idx, name, pattern)
        assert value is not None
        groups.setdefault((op, value), []).append((t, e))
    rows = [
        _mean_window_row(op, value, windows, gpu, knob, workload, batch_size, len(energy_cols))
        for (op, value), windows in groups.items()
    ]
    out = validate_profile(pd.DataFrame(rows), str(path))
    out.attrs.update({"source": "zeus-monitor", "file": path.name, "gpu": gpu})
    return out


def _window_pattern(
    path: Path, knob: str, knob_value: float | None, window_pattern: str | None
) -> re.Pattern[str] | None:
    """Check the knob and that exactly one source of its value is given; the compiled
    ``window_pattern`` (``None`` when ``knob_value`` gives the value)."""
    if knob not in KNOBS:
        raise InstanceError(f"knob = {knob!r}: expected one of {', '.join(KNOBS)}")
    if (knob_value is None) == (window_pattern is None):
        raise InstanceError(
            f"{path}: give exactly one of knob_value and window_pattern "
            "(the log does not record the GPU setting)"
        )
    pattern = re.compile(window_pattern) if window_pattern is not None else None
    if pattern is not None and "knob_value" not in pattern.groupindex:
        raise InstanceError(
            f"window_pattern = {window_pattern!r}: needs a named group (?P<knob_value>...)"
        )
    return pattern


def _energy_columns(path: Path, df: pd.DataFrame) -> list[str]:
    """The log's ``gpu<i>_energy`` columns in GPU order; at least one."""
    energy_cols = sorted(
        (c for c in df.columns if re.fullmatch(r"gpu\d+_energy", str(c))),
        key=lambda c: int(c[3:-7]),
    )
    if not energy_cols:
        raise InstanceError(f"{path}: no gpu<i>_energy column (found {V.first_few(df.columns)})")
    return energy_cols


def _parse_window_name(
    path: Path, idx: int, name: str, pattern: re.Pattern[str]
) -> tuple[str, float]:
    """(operation, knob value) from a window name; the operation defaults to the name."""
    m = pattern.fullmatch(name)
    if m is None:
        raise InstanceError(
            f"{path}, line {idx + 2}: window_name = {name!r} does not match "
            f"window_pattern {pattern.pattern!r}"
        )
    try:
        value = float(m.group("knob_value"))
    except ValueError:
        raise InstanceError(
            f"{path}, line {idx + 2}: window_name = {name!r}: knob value "
            f"{m.group('knob_value')!r} is not a number"
        ) from None
    op = name
    if "operation" in pattern.groupindex and m.group("operation"):
        op = m.group("operation")
    return op, value


def _mean_window_row(
    op: str,
    value: float,
    windows: list[tuple[float, float]],
    gpu: str,
    knob: str,
    workload: str,
    batch_size: int,
    num_gpus: int,
) -> dict[str, Any]:
    """The profile row of one (operation, knob value): its windows' mean time and energy."""
    n = len(windows)
    return profile_row(
        gpu=gpu,
        knob=knob,
        knob_value=value,
        workload=workload,
        operation=op,
        batch_size=int(batch_size),
        time_s=sum(w[0] for w in windows) / n,
        energy_j=sum(w[1] for w in windows) / n,
        samples=n,
        source="zeus-monitor",
        num_gpus=num_gpus,
    )
