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
        return warmup_order(M, min(S - s - 1, M))
    if schedule == "gpipe":
        return [(FORWARD, m) for m in range(M)] + [(BACKWARD, m) for m in reversed(range(M))]
    raise ValueError(f"schedule = {schedule!r}: unknown; known: {', '.join(SCHEDULES)}")


def warmup_order(num_microbatches: int, warmup: int) -> list[tuple[str, int]]:
    """A stage's 1F1B order with ``warmup`` forwards before its first backward.

    Synchronous 1F1B uses ``min(S - s - 1, M)`` (:func:`stage_order`); the EnvPipe
    scheduler (EnvPipe 4.3) moves more forwards up front. ``warmup = M`` runs all
    forwards first.
    """
    M, w = num_microbatches, warmup
    seq = [(FORWARD, m) for m in range(w)]
    for i in range(M - w):
        seq += [(FORWARD, w + i), (BACKWARD, i)]
    return seq + [(BACKWARD, m) for m in range(M - w, M)]


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
    orders = [stage_order(schedule, S, M, s) for s in range(S)]
    comps: list[Computation] = []
    for s in range(S):
        comps += [Computation(s, kind, m, stage_table(s, kind)) for kind, m in orders[s]]
    return tuple(comps), dag_edges(comps, orders)


def dag_edges(
    computations: tuple[Computation, ...] | list[Computation], orders: list[list[tuple[str, int]]]
) -> tuple[tuple[int, int], ...]:
    """Edges of a synchronous pipeline: each stage's ``orders[s]`` and the data dependencies.

    ``computations`` holds one forward and one backward per stage and microbatch
    (in any order; an edge names their indices there).
    """
    S = len(orders)
    M = sum(1 for c in computations if c.stage == 0 and c.kind == FORWARD)
    index = {(c.stage, c.kind, c.microbatch): i for i, c in enumerate(computations)}
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
    return tuple(dict.fromkeys(edges))
