"""Pipeline schedules as DAGs of computations (one per stage, microbatch and direction).

Edges come from two sources: the order in which each stage runs its computations
(a GPU does one thing at a time), and data dependencies between stages (the
forward of microbatch m on stage s needs its forward on stage s-1; the backward
on stage s needs the backward on stage s+1, and the last stage's backward needs
its own forward).
"""

from __future__ import annotations

import dataclasses
import itertools

FORWARD = "forward"
BACKWARD = "backward"
SCHEDULES = ("1f1b", "gpipe")


@dataclasses.dataclass(frozen=True)
class Computation:
    """One node of the DAG: what runs on which stage, and which option table it uses."""

    stage: int
    kind: str
    microbatch: int | None
    table: str

    @property
    def name(self) -> str:
        tag = {FORWARD: "F", BACKWARD: "B"}.get(self.kind, self.kind)
        mb = "" if self.microbatch is None else f",{self.microbatch}"
        return f"{tag}[{self.stage}{mb}]"


def stage_table(stage: int, kind: str) -> str:
    """Name of the option table of ``kind`` computations on ``stage`` (e.g. ``s3/forward``)."""
    return f"s{stage}/{kind}"


def stage_order(
    schedule: str, num_stages: int, num_microbatches: int, stage: int
) -> list[tuple[str, int]]:
    """The (kind, microbatch) sequence that ``stage`` runs in ``schedule``.

    - ``1f1b``: synchronous one-forward-one-backward (Perseus Fig. 6, EnvPipe Fig. 2):
      ``min(S - s - 1, M)`` warm-up forwards, then alternating forward and backward,
      then the remaining backwards.
    - ``gpipe``: all forwards in microbatch order, then all backwards in reverse
      microbatch order (the last stage starts on the freshest activations).
    """
    S, M, s = num_stages, num_microbatches, stage
    if schedule == "1f1b":
        warm = min(S - s - 1, M)
        seq = [(FORWARD, m) for m in range(warm)]
        for i in range(M - warm):
            seq += [(FORWARD, warm + i), (BACKWARD, i)]
        seq += [(BACKWARD, m) for m in range(M - warm, M)]
        return seq
    if schedule == "gpipe":
        return [(FORWARD, m) for m in range(M)] + [(BACKWARD, m) for m in reversed(range(M))]
    raise ValueError(f"schedule = {schedule!r}: unknown; known: {', '.join(SCHEDULES)}")


def build_dag(
    schedule: str, num_stages: int, num_microbatches: int
) -> tuple[tuple[Computation, ...], tuple[tuple[int, int], ...]]:
    """Computations and edges (index pairs) of a synchronous pipeline iteration.

    Parameters
    ----------
    schedule
        ``"1f1b"`` or ``"gpipe"``.
    num_stages, num_microbatches
        S >= 1 stages (one GPU each) and M >= 1 microbatches.
    """
    if int(num_stages) < 1:
        raise ValueError(f"num_stages = {num_stages!r}: must be >= 1")
    if int(num_microbatches) < 1:
        raise ValueError(f"num_microbatches = {num_microbatches!r}: must be >= 1")
    S, M = int(num_stages), int(num_microbatches)
    comps: list[Computation] = []
    index: dict[tuple[int, str, int], int] = {}
    orders = [stage_order(schedule, S, M, s) for s in range(S)]
    for s in range(S):
        for kind, m in orders[s]:
            index[(s, kind, m)] = len(comps)
            comps.append(Computation(s, kind, m, stage_table(s, kind)))
    edges: list[tuple[int, int]] = []
    for s in range(S):
        seq = orders[s]
        for a, b in itertools.pairwise(seq):
            edges.append((index[(s, *a)], index[(s, *b)]))
        for m in range(M):
            if s > 0:
                edges.append((index[(s - 1, FORWARD, m)], index[(s, FORWARD, m)]))
            if s < S - 1:
                edges.append((index[(s + 1, BACKWARD, m)], index[(s, BACKWARD, m)]))
            else:
                edges.append((index[(s, FORWARD, m)], index[(s, BACKWARD, m)]))
    # The last stage's own order already implies F -> B of one microbatch; keep edges unique.
    return tuple(comps), tuple(dict.fromkeys(edges))
