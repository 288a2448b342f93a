"""Readers for published PEM inputs: the Perseus stage-profile format.

- :func:`read_perseus_profile`: option tables keyed ``s{stage}/{instruction}``.
- :func:`read_perseus_stage_profile`: the same rows as a profile (the profile schema).
- :func:`instance_from_perseus_profile`: a PEM instance of a schedule over them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from energyopt.core.instance import InstanceError
from energyopt.core.validate import (
    csv_cell,
    fail,
    integer,
    number,
    shown,
    string,
)
from energyopt.pipeline.instance import MAX_POWER_W, PemInstance
from energyopt.pipeline.options import MAX_CLOCK_MHZ, MAX_ENERGY_J, MAX_TIME_S, OptionTable
from energyopt.pipeline.schedules import BACKWARD, FORWARD, stage_table
from energyopt.profiles.schema import profile_row, validate_profile

if TYPE_CHECKING:  # pandas is imported where a profile is read: no method needs it
    import pandas as pd

PERSEUS_COLUMNS = ("stage", "instruction", "frequency", "time", "energy")
#: P2P blocking power of the GPUs the Perseus authors published profiles for (W), from
#: their evaluation code; ``instance_from_perseus_profile(..., gpu=...)`` reads them.
P_BLOCKING_W = {"a100": 83.64, "a100-sxm": 83.64, "a100-sxm4": 83.64, "a40": 70.38}


def blocking_power(gpu: str | None, p_blocking_w: float | None) -> float:
    """``p_blocking_w`` when given, else the preset of ``gpu`` (:data:`P_BLOCKING_W`).

    GPU names are read case-insensitively with ``_`` as ``-`` (``"A100_SXM"`` is
    ``"a100-sxm"``).
    """
    if p_blocking_w is not None:
        return number("p_blocking_w", p_blocking_w, minimum=0.0, maximum=MAX_POWER_W)
    if gpu is None:
        raise InstanceError("p_blocking_w: give it, or a gpu with a preset (a100, a40)")
    key = string("gpu", gpu).strip().lower().replace("_", "-")
    if key not in P_BLOCKING_W:
        raise InstanceError(
            f"gpu = {shown(gpu)}: no blocking-power preset; known: "
            f"{', '.join(sorted(P_BLOCKING_W))} (or give p_blocking_w)"
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
        One line naming the file, the line and the field: missing columns (with the
        first few found), unknown instructions, non-integral stages or frequencies,
        non-numeric, negative or non-finite values (``inf``, ``1e400``), booleans, or
        repeated (stage, instruction, frequency) rows.
    """
    # Imports pandas (0.14 s), which only reading a profile needs: the package, imported by
    # every cell server, starts without it.
    from energyopt.profiles.readers import read_csv_table

    path = Path(path)
    df = read_csv_table(path, PERSEUS_COLUMNS, max_rows=MAX_PROFILE_ROWS)
    rows: dict[str, list[tuple[int, float, float]]] = {}
    for idx, row in enumerate(df[list(PERSEUS_COLUMNS)].itertuples(index=False, name=None)):
        try:
            name, entry = _profile_row(*row)
        except InstanceError as exc:
            raise InstanceError(f"{path}, line {idx + 2}: {exc}") from None
        rows.setdefault(name, []).append(entry)
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


#: The most rows read from a stage profile (the published ones have ~1,300).
MAX_PROFILE_ROWS = 100_000


def _profile_row(
    stage: object, instruction: object, frequency: object, time: object, energy: object
) -> tuple[str, tuple[int, float, float]]:
    """One CSV row as ``(table name, (clock, seconds, joules))``, strictly."""
    s = integer("stage", csv_cell(stage), minimum=0, maximum=100_000)
    f = integer("frequency", csv_cell(frequency), minimum=1, maximum=MAX_CLOCK_MHZ)
    instr = instruction.strip() if isinstance(instruction, str) else instruction
    if instr not in (FORWARD, BACKWARD):
        raise fail("instruction", instruction, "expected 'forward' or 'backward'")
    t = number("time", csv_cell(time), minimum=0.0, maximum=MAX_TIME_S)
    e = number("energy", csv_cell(energy), minimum=0.0, maximum=MAX_ENERGY_J)
    return stage_table(s, instr), (f, t, e)


def read_perseus_stage_profile(
    path: str | Path, *, gpu: str | None = None, workload: str | None = None
) -> pd.DataFrame:
    """A Perseus stage profile as a profile (knob ``sm_clock_mhz``, with ``stage``).

    The published file names read ``<workload>+<gpu>_<precision>.csv`` (e.g.
    ``gpt3-175b+a100_sxm_bf16.csv``); ``gpu`` and ``workload`` default to those
    parts. Validation is that of :func:`read_perseus_profile`.
    """
    path = Path(path)
    tables = read_perseus_profile(path)
    stem_workload, _, stem_gpu = path.stem.partition("+")
    rows = []
    for key, table in tables.items():
        stage_txt, op = key.split("/")
        for f, t, e in zip(table.sm_clock_mhz, table.time_s, table.energy_j):
            rows.append(
                profile_row(
                    gpu=gpu or stem_gpu or "unknown",
                    knob="sm_clock_mhz",
                    knob_value=f,
                    workload=workload or stem_workload,
                    operation=op,
                    batch_size=0,
                    time_s=t,
                    energy_j=e,
                    samples=1,
                    source="perseus-profile",
                    stage=int(stage_txt[1:]),
                )
            )
    import pandas as pd  # here, not at the top: the package starts without pandas

    df = validate_profile(pd.DataFrame(rows), str(path))
    df = df.sort_values(["stage", "operation", "knob_value"], ascending=[True, True, False])
    df = df.reset_index(drop=True)
    df.attrs.update({"source": "perseus-profile", "file": path.name})
    return df


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
    if num_stages is not None:
        num_stages = integer("num_stages", num_stages, minimum=1)
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
