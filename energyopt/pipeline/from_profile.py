"""A profile (:mod:`energyopt.profiles.schema`) as PEM option tables and a PEM instance.

- :func:`to_option_tables`: option tables keyed ``s{stage}/{operation}``, one option
  per SM clock, fastest first.
- :func:`to_pem_instance`: a :class:`~energyopt.pipeline.instance.PemInstance` of a
  pipeline schedule over those tables.
- :func:`read_any_profile`: a Perseus stage profile or a profile in the schema, by
  the file's header (``energyopt instances from-profile``).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from energyopt.core.files import MAX_HEADER_BYTES, check_regular
from energyopt.core.instance import InstanceError
from energyopt.pipeline.instance import PemInstance
from energyopt.pipeline.options import OptionTable
from energyopt.pipeline.readers import PERSEUS_COLUMNS, read_perseus_stage_profile
from energyopt.pipeline.schedules import BACKWARD, FORWARD, stage_table
from energyopt.profiles.schema import read_profile, validate_profile


def _select(df: pd.DataFrame, where: str, **equal: str | None) -> pd.DataFrame:
    """Rows matching the given column values; a column left ``None`` must be uniform."""
    for col, want in equal.items():
        if want is not None:
            df = df[df[col] == want]
            if df.empty:
                raise InstanceError(f"{where}: no row with {col} = {want!r}")
        else:
            seen = sorted(map(str, df[col].unique()))
            if len(seen) > 1:
                raise InstanceError(
                    f"{where}: the profile mixes {col} values {seen}: pick one with {col}="
                )
    return df


def to_option_tables(
    df: pd.DataFrame,
    *,
    workload: str | None = None,
    gpu: str | None = None,
    stage: int | None = None,
    where: str = "profile",
) -> dict[str, OptionTable]:
    """PEM option tables from the ``sm_clock_mhz`` rows of a profile.

    Rows are grouped by stage (the ``stage`` column; a profile without one is
    stage ``stage``, default 0) and operation, giving tables keyed
    ``s{stage}/{operation}`` as :func:`energyopt.pipeline.readers.read_perseus_profile`
    does, fastest option first.

    Raises
    ------
    InstanceError
        When there are no ``sm_clock_mhz`` rows, the profile mixes workloads or
        GPUs without ``workload`` / ``gpu`` choosing one, or a clock repeats
        within a table (average repeated measurements before converting).
    """
    df = validate_profile(df, where)
    df = df[df["knob"] == "sm_clock_mhz"]
    if df.empty:
        raise InstanceError(f"{where}: no sm_clock_mhz rows (PEM options are SM clocks)")
    df = _select(df, where, workload=workload, gpu=gpu)
    if "stage" in df.columns and df["stage"].notna().all():
        stages = df["stage"].astype(int)
        if stage is not None:
            df = df[stages == stage]
            stages = stages[stages == stage]
            if df.empty:
                raise InstanceError(f"{where}: no row of stage {stage}")
    else:
        stages = pd.Series(0 if stage is None else int(stage), index=df.index)
    tables: dict[str, OptionTable] = {}
    for (s, op), rows in df.groupby([stages, df["operation"]], sort=True):
        name = stage_table(int(s), str(op))
        clocks = [int(v) for v in rows["knob_value"]]
        if len(set(clocks)) != len(clocks):
            dup = sorted({c for c in clocks if clocks.count(c) > 1})
            raise InstanceError(f"{where}: table {name}: sm_clock_mhz {dup} appears more than once")
        entries = sorted(
            zip(clocks, rows["time_s"].astype(float), rows["energy_j"].astype(float)),
            key=lambda r: (r[1], -r[0]),
        )
        table = OptionTable(
            tuple(f for f, _, _ in entries),
            tuple(float(t) for _, t, _ in entries),
            tuple(float(e) for _, _, e in entries),
        )
        table.validate(f"{where}: {name}")
        tables[name] = table
    return tables


def to_pem_instance(
    df: pd.DataFrame,
    num_microbatches: int,
    *,
    p_blocking_w: float,
    schedule: str = "1f1b",
    num_stages: int | None = None,
    deadline_s: float | None = None,
    workload: str | None = None,
    gpu: str | None = None,
    name: str = "",
    where: str = "profile",
) -> PemInstance:
    """A PEM instance of ``schedule`` whose options come from a profile.

    Every stage below ``num_stages`` (default: the stages in the profile) needs
    ``forward`` and ``backward`` rows. A single-stage profile (no ``stage``
    column) may be replicated onto ``num_stages`` identical stages, the usual
    way to study a pipeline of equal layers from one GPU's profile.
    ``source`` of the instance records the profile's sources, so an instance
    built from a simulated profile says ``simulated``.
    """
    tables = to_option_tables(df, workload=workload, gpu=gpu, where=where)
    stages = sorted({int(k.split("/")[0][1:]) for k in tables})
    has_stage = "stage" in df.columns and df["stage"].notna().all()
    S = num_stages if num_stages is not None else len(stages)
    if not isinstance(S, int) or S < 1:
        raise InstanceError(f"num_stages = {num_stages!r}: must be an integer >= 1")
    used: dict[str, OptionTable] = {}
    for s in range(S):
        for kind in (FORWARD, BACKWARD):
            src = stage_table(s if has_stage else 0, kind)
            if src not in tables:
                raise InstanceError(
                    f"{where}: stage {s if has_stage else 0} has no {kind!r} sm_clock_mhz rows "
                    f"(needed for {S} stages; tables found: {', '.join(sorted(tables))})"
                )
            used[stage_table(s, kind)] = tables[src]
    sources = sorted(map(str, df["source"].unique()))
    workloads = "+".join(sorted(map(str, df["workload"].unique())))
    return PemInstance.from_schedule(
        schedule,
        S,
        num_microbatches,
        used,
        p_blocking_w,
        deadline_s,
        name=name or f"{workloads} {schedule} {S}x{num_microbatches}",
        source=", ".join(sources),
    )


def read_any_profile(path: str | Path) -> pd.DataFrame:
    """A profile from ``path``: a Perseus stage profile (by its header) or the schema's.

    A CSV whose header has Perseus' columns (``stage,instruction,frequency,time,
    energy``) is read by :func:`energyopt.pipeline.readers.read_perseus_stage_profile`;
    anything else by :func:`energyopt.profiles.schema.read_profile` (CSV or Parquet,
    as ``energyopt profile --out`` writes it).
    """
    path = Path(path)
    check_regular(path, "profile")  # a FIFO would block the header read below
    if path.suffix.lower() != ".parquet":
        try:
            with path.open(encoding="utf-8", errors="replace") as f:
                # Bounded: a huge one-line file is refused by the reader it goes to.
                header = {c.strip() for c in f.readline(MAX_HEADER_BYTES).split(",")}
        except OSError as exc:
            raise InstanceError(f"{path}: cannot read: {exc.strerror}") from None
        if set(PERSEUS_COLUMNS) <= header:
            return read_perseus_stage_profile(path)
    return read_profile(path)
