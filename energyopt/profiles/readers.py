"""Readers of published measurement formats into the profile schema.

- Perseus stage profiles (SOSP'24 artifact) are read by the pipeline family
  (:func:`energyopt.pipeline.readers.read_perseus_stage_profile`): their stages and
  forward/backward computations are PEM's.
- Zeus power traces (NSDI'23, ``summary_power_<gpu>.csv``):
  ``dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power``.
- ZeusMonitor window logs: :mod:`energyopt.profiles.zeusmonitor`.

Each returns a validated profile (:func:`energyopt.profiles.schema.validate_profile`)
with ``source`` naming the format. Bad input raises
:class:`~energyopt.core.instance.InstanceError` naming the file, the line and
the field.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import pandas as pd

from energyopt.core import validate as V
from energyopt.core.files import read_csv_text
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
MAX_ROWS = 100_000


def read_csv_table(path: Path, expected: tuple[str, ...], *, max_rows: int) -> pd.DataFrame:
    """A CSV file with at least the ``expected`` columns and one row; one-line errors.

    The file is checked before pandas parses it (:func:`energyopt.core.files.read_csv_text`:
    a regular file, a bounded size, a sane header, at most ``max_rows`` rows, no
    truncated row), so that a hostile file costs at most one pass over its bytes.
    """
    text = read_csv_text(path, max_rows=max_rows)
    try:
        df = pd.read_csv(io.StringIO(text))
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise InstanceError(f"{path}: cannot read as CSV: {V.one_line(exc)}") from None
    except (ValueError, OverflowError, MemoryError) as exc:
        raise InstanceError(f"{path}: cannot read as CSV: {V.one_line(exc)}") from None
    V.columns(str(path), list(df.columns), expected)
    if df.empty:
        raise InstanceError(f"{path}: no rows")
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
    seen: set[tuple[str, int, str, float]] = set()
    # Row tuples, not df.at per cell: a trace at the row cap is read in seconds.
    table = df[list(ZEUS_POWER_COLUMNS)].itertuples(index=False, name=None)
    for k, (dataset, network, raw_bs, optimizer, raw_pl, raw_t, raw_p) in enumerate(table):
        try:
            t = V.positive("time_per_epoch", V.csv_cell(raw_t))
            p = V.nonneg("average_power", V.csv_cell(raw_p))
            pl = V.positive("power_limit", V.csv_cell(raw_pl))
            bs = V.integer("batch_size", V.csv_cell(raw_bs), minimum=1)
        except InstanceError as exc:
            raise InstanceError(f"{path}, line {k + 2}: {exc}") from None
        workload, optimizer = f"{dataset}/{network}", str(optimizer)
        key = (workload, bs, optimizer, pl)
        if key in seen:  # stop here: the rest of a long file need not be read
            raise InstanceError(
                f"{path}, line {k + 2}: (dataset, network, batch_size, optimizer, "
                "power_limit) repeats an earlier row"
            )
        seen.add(key)
        rows.append(
            profile_row(
                gpu=name,
                knob="power_limit_w",
                knob_value=pl,
                workload=workload,
                operation="epoch",
                batch_size=bs,
                time_s=t,
                energy_j=p * t,
                samples=1,
                source="zeus-trace",
                power_w=p,
                optimizer=optimizer,
            )
        )
    out = validate_profile(pd.DataFrame(rows), str(path))
    out.attrs.update({"source": "zeus-trace", "file": path.name, "gpu": name})
    return out
