"""Readers of published measurement formats into the profile schema.

- Perseus stage profiles (SOSP'24 artifact) are read by the pipeline family
  (:func:`energyopt.pipeline.readers.read_perseus_stage_profile`; the name here is a
  deprecated alias): their stages and forward/backward computations are PEM's.
- Zeus power traces (NSDI'23, ``summary_power_<gpu>.csv``):
  ``dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power``.
- ZeusMonitor window logs: :mod:`energyopt.profiles.zeusmonitor`.

Each returns a validated profile (:func:`energyopt.profiles.schema.validate_profile`)
with ``source`` naming the format. Bad input raises
:class:`~energyopt.core.instance.InstanceError` naming the file, the line and
the field.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from energyopt.core import validate as V
from energyopt.core.instance import InstanceError
from energyopt.profiles.schema import profile_row, validate_profile

ZEUS_POWER_COLUMNS = (
    "dataset",
    "network",
    "batch_size",
    "optimizer",
    "power_limit",
    "time_per_epoch",
    "average_power",
)


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


def __getattr__(name: str) -> object:
    """``read_perseus_stage_profile``: deprecated here (see the module docstring)."""
    import energyopt.profiles as _profiles

    if name in _profiles._MOVED:
        return getattr(_profiles, name)
    raise AttributeError(f"module 'energyopt.profiles.readers' has no attribute {name!r}")
