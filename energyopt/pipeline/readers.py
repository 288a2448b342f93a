"""Readers for published PEM inputs: the Perseus stage-profile format."""

from __future__ import annotations

from pathlib import Path

from energyopt.core.instance import InstanceError
from energyopt.pipeline.instance import PemInstance
from energyopt.pipeline.options import OptionTable
from energyopt.pipeline.schedules import BACKWARD, FORWARD, stage_table
from energyopt.profiles.readers import PERSEUS_COLUMNS, read_perseus_rows

__all__ = [
    "PERSEUS_COLUMNS",
    "P_BLOCKING_W",
    "blocking_power",
    "instance_from_perseus_profile",
    "read_perseus_profile",
]

#: P2P blocking power of the GPUs the Perseus authors published profiles for (W), from
#: their evaluation code; ``instance_from_perseus_profile(..., gpu=...)`` reads them.
P_BLOCKING_W = {"a100": 83.64, "a100-sxm": 83.64, "a40": 70.38}


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
    of one computation; :func:`energyopt.profiles.readers.read_perseus_rows` reads
    and checks it. Tables are keyed ``s{stage}/{instruction}``, fastest clock first.

    Raises
    ------
    InstanceError
        Naming the file, the row and the field for missing columns, unknown
        instructions, non-numeric, negative or non-finite values, or repeated
        (stage, instruction, frequency) rows.
    """
    rows: dict[str, list[tuple[int, float, float]]] = {}
    for r in read_perseus_rows(path):
        rows.setdefault(stage_table(r.stage, r.operation), []).append(
            (r.sm_clock_mhz, r.time_s, r.energy_j)
        )
    tables = {}
    for name, entries in sorted(rows.items()):
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
