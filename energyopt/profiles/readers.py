"""Readers of published measurement formats into the profile schema.

- Perseus stage profiles (SOSP'24 artifact): ``stage,instruction,frequency,time,energy``
  (:func:`read_perseus_rows` checks the file; the pipeline family builds its option
  tables from those rows).
- Zeus power traces (NSDI'23, ``summary_power_<gpu>.csv``):
  ``dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power``.
- ZeusMonitor window logs: ``start_time,window_name,elapsed_time,gpu0_energy[,gpu1_energy...]``.

Each returns a validated profile (:func:`energyopt.profiles.schema.validate_profile`)
with ``source`` naming the format. Bad input raises
:class:`~energyopt.core.instance.InstanceError` naming the file, the line and
the field.
"""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path

import pandas as pd

from energyopt.core.instance import InstanceError
from energyopt.core.validate import integer, shown
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


def _read_csv(path: Path) -> pd.DataFrame:
    try:
        df = pd.read_csv(path)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise InstanceError(f"{path}: cannot read as CSV: {exc}") from None
    if df.empty:
        raise InstanceError(f"{path}: no rows")
    return df


def _require(path: Path, df: pd.DataFrame, columns: tuple[str, ...]) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise InstanceError(
            f"{path}: missing column(s) {', '.join(missing)} "
            f"(expected {','.join(columns)}; found {','.join(map(str, df.columns))})"
        )


def _number(path: Path, df: pd.DataFrame, idx: int, field: str, positive: bool = False) -> float:
    raw = df.at[idx, field]
    try:
        v = float(raw)
    except (TypeError, ValueError):
        v = math.nan
    if not math.isfinite(v) or v < 0 or (positive and v == 0):
        need = "> 0" if positive else ">= 0"
        raise InstanceError(
            f"{path}, line {idx + 2}: {field} = {raw!r}: must be a finite number {need}"
        )
    return v


PERSEUS_COLUMNS = ("stage", "instruction", "frequency", "time", "energy")
PERSEUS_OPERATIONS = ("forward", "backward")


@dataclasses.dataclass(frozen=True)
class PerseusRow:
    """One row of a Perseus stage profile: one computation kind of a stage at one clock."""

    stage: int
    operation: str
    sm_clock_mhz: int
    time_s: float
    energy_j: float


def _cell(value: object) -> object:
    """A CSV cell as a number when it reads as one (``"1410"`` -> 1410, ``"inf"`` -> inf)."""
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return value
    try:
        return value.item()  # numpy scalar -> Python number
    except AttributeError:
        return value


def read_perseus_rows(path: str | Path) -> list[PerseusRow]:
    """The rows of a Perseus stage profile (SOSP'24 artifact), checked.

    The file is a CSV with columns ``stage,instruction,frequency,time,energy``: one
    row per stage, instruction (``forward`` / ``backward``) and SM clock in MHz,
    with the seconds and joules of one computation.

    Raises
    ------
    InstanceError
        Naming the file, the row and the field for missing columns, unknown
        instructions, non-numeric, negative or non-finite values, or repeated
        (stage, instruction, frequency) rows.
    """
    path = Path(path)
    df = _read_perseus_csv(path)
    out = [_perseus_row(path, int(idx) + 2, row) for idx, row in df.iterrows()]  # line 1: header
    seen: dict[tuple[int, str], list[int]] = {}
    for r in out:
        seen.setdefault((r.stage, r.operation), []).append(r.sm_clock_mhz)
    for (stage, op), clocks in sorted(seen.items()):
        if len(set(clocks)) != len(clocks):
            dup = sorted({f for f in clocks if clocks.count(f) > 1})
            raise InstanceError(
                f"{path}: table s{stage}/{op}: frequency {dup} appears more than once"
            )
    return out


def _read_perseus_csv(path: Path) -> pd.DataFrame:
    try:
        df = pd.read_csv(path)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise InstanceError(f"{path}: cannot read as CSV: {exc}") from None
    missing = [c for c in PERSEUS_COLUMNS if c not in df.columns]
    if missing:
        found = [shown(str(c))[:30] for c in df.columns[:5]]
        more = f" and {len(df.columns) - 5} more" if len(df.columns) > 5 else ""
        raise InstanceError(
            f"{path}: missing column(s) {', '.join(missing)} "
            f"(expected {','.join(PERSEUS_COLUMNS)}; found {', '.join(found)}{more})"
        )
    if df.empty:
        raise InstanceError(f"{path}: no rows")
    return df


def _perseus_row(path: Path, line: int, row: pd.Series) -> PerseusRow:
    try:
        stage = integer("stage", _cell(row["stage"]), minimum=0, maximum=100_000)
        freq = integer("frequency", _cell(row["frequency"]), minimum=1, maximum=None)
    except InstanceError as exc:
        raise InstanceError(f"{path}, line {line}: {exc}") from None
    instr = str(row["instruction"]).strip()
    if instr not in PERSEUS_OPERATIONS:
        raise InstanceError(
            f"{path}, line {line}: instruction = {instr!r}: expected 'forward' or 'backward'"
        )
    vals = {}
    for field in ("time", "energy"):
        try:
            v = float(row[field])
        except (TypeError, ValueError):
            v = math.nan
        if not math.isfinite(v) or v < 0:
            raise InstanceError(
                f"{path}, line {line}: {field} = {row[field]!r}: must be a finite number >= 0"
            )
        vals[field] = v
    return PerseusRow(stage, instr, freq, vals["time"], vals["energy"])


def read_perseus_stage_profile(
    path: str | Path, *, gpu: str | None = None, workload: str | None = None
) -> pd.DataFrame:
    """A Perseus stage profile as a profile (knob ``sm_clock_mhz``, with ``stage``).

    The published file names read ``<workload>+<gpu>_<precision>.csv`` (e.g.
    ``gpt3-175b+a100_sxm_bf16.csv``); ``gpu`` and ``workload`` default to those
    parts. Validation is that of :func:`read_perseus_rows`.
    """
    path = Path(path)
    stem_workload, _, stem_gpu = path.stem.partition("+")
    rows = [
        profile_row(
            gpu=gpu or stem_gpu or "unknown",
            knob="sm_clock_mhz",
            knob_value=r.sm_clock_mhz,
            workload=workload or stem_workload,
            operation=r.operation,
            batch_size=0,
            time_s=r.time_s,
            energy_j=r.energy_j,
            samples=1,
            source="perseus-profile",
            stage=r.stage,
        )
        for r in read_perseus_rows(path)
    ]
    df = validate_profile(pd.DataFrame(rows), str(path))
    df = df.sort_values(["stage", "operation", "knob_value"], ascending=[True, True, False])
    df = df.reset_index(drop=True)
    df.attrs.update({"source": "perseus-profile", "file": path.name})
    return df


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
    df = _read_csv(path)
    _require(path, df, ZEUS_POWER_COLUMNS)
    name = gpu or re.sub(r"^summary_power_", "", path.stem)
    rows = []
    for idx in df.index:
        t = _number(path, df, idx, "time_per_epoch", positive=True)
        p = _number(path, df, idx, "average_power")
        pl = _number(path, df, idx, "power_limit", positive=True)
        bs = _number(path, df, idx, "batch_size", positive=True)
        if bs != int(bs):
            raise InstanceError(
                f"{path}, line {idx + 2}: batch_size = {df.at[idx, 'batch_size']!r}: "
                "must be an integer"
            )
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
    df = _read_csv(path)
    _require(path, df, ZEUS_MONITOR_COLUMNS)
    energy_cols = sorted(
        (c for c in df.columns if re.fullmatch(r"gpu\d+_energy", str(c))),
        key=lambda c: int(c[3:-7]),
    )
    if not energy_cols:
        raise InstanceError(
            f"{path}: no gpu<i>_energy column (found {','.join(map(str, df.columns))})"
        )
    groups: dict[tuple[str, float], list[tuple[float, float]]] = {}
    for idx in df.index:
        name = str(df.at[idx, "window_name"])
        t = _number(path, df, idx, "elapsed_time")
        e = sum(_number(path, df, idx, c) for c in energy_cols)
        op, value = name, knob_value
        if pattern is not None:
            m = pattern.fullmatch(name)
            if m is None:
                raise InstanceError(
                    f"{path}, line {idx + 2}: window_name = {name!r} does not match "
                    f"window_pattern {window_pattern!r}"
                )
            try:
                value = float(m.group("knob_value"))
            except ValueError:
                raise InstanceError(
                    f"{path}, line {idx + 2}: window_name = {name!r}: knob value "
                    f"{m.group('knob_value')!r} is not a number"
                ) from None
            if "operation" in pattern.groupindex and m.group("operation"):
                op = m.group("operation")
        assert value is not None
        groups.setdefault((op, value), []).append((t, e))
    rows = []
    for (op, value), windows in groups.items():
        n = len(windows)
        t = sum(w[0] for w in windows) / n
        e = sum(w[1] for w in windows) / n
        rows.append(
            profile_row(
                gpu=gpu,
                knob=knob,
                knob_value=value,
                workload=workload,
                operation=op,
                batch_size=int(batch_size),
                time_s=t,
                energy_j=e,
                samples=n,
                source="zeus-monitor",
                num_gpus=len(energy_cols),
            )
        )
    out = validate_profile(pd.DataFrame(rows), str(path))
    out.attrs.update({"source": "zeus-monitor", "file": path.name, "gpu": gpu})
    return out
