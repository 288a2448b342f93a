"""Readers for published PEM inputs: the Perseus stage-profile format."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from energyopt.core.instance import InstanceError
from energyopt.core.validate import integer, shown
from energyopt.pipeline.instance import PemInstance
from energyopt.pipeline.options import OptionTable
from energyopt.pipeline.schedules import BACKWARD, FORWARD, stage_table

PERSEUS_COLUMNS = ("stage", "instruction", "frequency", "time", "energy")
#: P2P blocking power of the GPUs the Perseus authors published profiles for (W), from
#: their evaluation code; ``instance_from_perseus_profile(..., gpu=...)`` reads them.
P_BLOCKING_W = {"a100": 83.64, "a100-sxm": 83.64, "a40": 70.38}


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


def blocking_power(gpu: str | None, p_blocking_w: float | None) -> float:
    """``p_blocking_w`` when given, else the preset of ``gpu`` (:data:`P_BLOCKING_W`)."""
    if p_blocking_w is not None:
        return p_blocking_w
    if gpu is None:
        raise InstanceError("p_blocking_w: give it, or a gpu with a preset (a100, a40)")
    key = gpu.strip().lower()
    if key not in P_BLOCKING_W:
        raise InstanceError(
            f"gpu = {gpu!r}: no blocking-power preset; known: {', '.join(sorted(P_BLOCKING_W))} "
            "(or give p_blocking_w)"
        )
    return P_BLOCKING_W[key]


def read_perseus_profile(path: str | Path) -> dict[str, OptionTable]:
    """Option tables from a Perseus stage profile.

    The format (Perseus SOSP'24 artifact) is a CSV with columns
    ``stage,instruction,frequency,time,energy``: one row per stage, instruction
    (``forward`` / ``backward``) and SM clock in MHz, with the seconds and joules
    of one computation. Tables are keyed ``s{stage}/{instruction}``, fastest
    clock first.

    Raises
    ------
    InstanceError
        Naming the file, the row and the field for missing columns, unknown
        instructions, non-numeric, negative or non-finite values, or repeated
        (stage, instruction, frequency) rows.
    """
    path = Path(path)
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
    rows: dict[str, list[tuple[int, float, float]]] = {}
    for idx, row in df.iterrows():
        line = int(idx) + 2  # header is line 1
        try:
            stage = integer("stage", _cell(row["stage"]), minimum=0, maximum=100_000)
            freq = integer("frequency", _cell(row["frequency"]), minimum=1, maximum=None)
        except InstanceError as exc:
            raise InstanceError(f"{path}, line {line}: {exc}") from None
        instr = str(row["instruction"]).strip()
        if instr not in (FORWARD, BACKWARD):
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
        if stage < 0 or freq <= 0:
            raise InstanceError(
                f"{path}, line {line}: stage = {stage}, frequency = {freq}: out of range"
            )
        rows.setdefault(stage_table(stage, instr), []).append((freq, vals["time"], vals["energy"]))
    tables = {}
    for name, entries in sorted(rows.items()):
        clocks = [f for f, _, _ in entries]
        if len(set(clocks)) != len(clocks):
            dup = sorted({f for f in clocks if clocks.count(f) > 1})
            raise InstanceError(f"{path}: table {name}: frequency {dup} appears more than once")
        entries.sort(key=lambda r: (r[1], -r[0]))
        tables[name] = OptionTable(
            tuple(f for f, _, _ in entries),
            tuple(t for _, t, _ in entries),
            tuple(e for _, _, e in entries),
        )
    return tables


def instance_from_perseus_profile(
    path: str | Path,
    num_microbatches: int,
    *,
    schedule: str = "1f1b",
    p_blocking_w: float | None = None,
    deadline_s: float | None = None,
    num_stages: int | None = None,
    gpu: str | None = None,
) -> PemInstance:
    """A PEM instance of ``schedule`` over the stages of a Perseus profile.

    ``num_stages`` defaults to the number of stages in the file; every stage below
    it must have both a forward and a backward table. The blocking power is
    ``p_blocking_w``, or the preset of ``gpu`` (``"a100"``: 83.64 W, ``"a40"``:
    70.38 W, the values of the Perseus authors' evaluation code).
    """
    p_blocking_w = blocking_power(gpu, p_blocking_w)
    tables = read_perseus_profile(path)
    stages = sorted({int(k.split("/")[0][1:]) for k in tables})
    S = num_stages if num_stages is not None else len(stages)
    for s in range(S):
        for kind in (FORWARD, BACKWARD):
            if stage_table(s, kind) not in tables:
                raise InstanceError(
                    f"{path}: stage {s} has no {kind!r} rows (needed for {S} stages)"
                )
    used = {
        stage_table(s, k): tables[stage_table(s, k)] for s in range(S) for k in (FORWARD, BACKWARD)
    }
    return PemInstance.from_schedule(
        schedule,
        S,
        num_microbatches,
        used,
        p_blocking_w,
        deadline_s,
        name=f"{Path(path).stem} {schedule} {S}x{num_microbatches}",
        source=str(Path(path).name),
    )
