"""Buddy placement with migration (PowerFlow 5.3).

GPU counts are powers of two (network packing) and nodes hold ``r`` GPUs, ``r`` a
power of two. A job of ``s <= r`` GPUs takes an aligned block of ``s`` GPUs inside
one node (its buddy block); a job of ``s > r`` GPUs takes ``s / r`` whole nodes.
Packing the jobs by decreasing size leaves at most one node partly used, so ``U``
GPUs fit in ``ceil(U / r)`` powered nodes (PC-14); the other nodes are shut down.

:func:`buddy_place` first keeps every job whose size did not change in its previous
block, places the others into free buddy blocks, and falls back to a full
compaction (migrating jobs) when that would power more than ``ceil(U / r)`` nodes.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Hashable, Mapping, Sequence

from energyopt.powercap.instance import is_power_of_two


@dataclasses.dataclass(frozen=True)
class Placement:
    """Where each job runs: ``blocks[key] = (first GPU, GPU count)``, GPUs numbered
    node by node (GPU ``g`` is on node ``g // r``)."""

    blocks: Mapping[Hashable, tuple[int, int]]
    gpus_per_node: int
    num_nodes: int
    migrated: tuple[Hashable, ...] = ()

    @property
    def powered_nodes(self) -> int:
        return len(self.nodes_in_use())

    def nodes_in_use(self) -> set[int]:
        r = self.gpus_per_node
        out: set[int] = set()
        for start, size in self.blocks.values():
            out.update(range(start // r, (start + size - 1) // r + 1))
        return out

    def spanning_jobs(self) -> list[Hashable]:
        """Jobs placed on more than one node."""
        r = self.gpus_per_node
        return [k for k, (s, n) in self.blocks.items() if s // r != (s + n - 1) // r]


def _compact(
    sizes: Mapping[Hashable, int], num_nodes: int, r: int, previous: Mapping | None
) -> dict[Hashable, tuple[int, int]] | None:
    # Decreasing size keeps every offset a multiple of the next size: aligned blocks
    # that never cross a node boundary; ties keep their previous order to limit moves.
    prev = previous or {}
    order = sorted(sizes, key=lambda k: (-sizes[k], prev.get(k, (1 << 60, 0))[0], str(k)))
    offset, out = 0, {}
    for k in order:
        s = sizes[k]
        if offset + s > num_nodes * r:
            return None
        out[k] = (offset, s)
        offset += s
    return out


def buddy_place(
    sizes: Mapping[Hashable, int] | Sequence[int],
    num_nodes: int,
    gpus_per_node: int,
    previous: Mapping[Hashable, tuple[int, int]] | None = None,
) -> Placement | None:
    """Place jobs of power-of-two sizes; ``None`` when they do not fit in the cluster.

    Parameters
    ----------
    sizes
        GPU count per job (a mapping job -> count, or a sequence indexed by position).
    num_nodes, gpus_per_node
        The cluster.
    previous
        The previous placement's blocks; jobs of unchanged size stay put when they can.

    Returns
    -------
    Placement or None
        ``migrated`` lists the jobs of unchanged size that had to move.
    """
    r = gpus_per_node
    sizes = _positive_sizes(sizes)
    used = sum(sizes.values())
    if used > num_nodes * r:
        return None
    target = -(-used // r)  # PC-14: ceil(U / r) powered nodes suffice
    prev = {k: b for k, b in (previous or {}).items() if k in sizes and b[1] == sizes[k]}
    free = [True] * (num_nodes * r)
    blocks = _keep_previous_blocks(prev, sizes, free, num_nodes, r)
    powered = {g // r for g in range(num_nodes * r) if not free[g]}
    if _place_moved_jobs(sizes, blocks, free, powered, num_nodes, r) and len(powered) <= target:
        return Placement(blocks, r, num_nodes, ())
    compact = _compact(sizes, num_nodes, r, previous)
    if compact is None:
        return None
    moved = tuple(k for k, b in compact.items() if k in prev and prev[k] != b)
    return Placement(compact, r, num_nodes, moved)


def packs_into(sizes: Sequence[int], num_nodes: int, gpus_per_node: int) -> bool:
    """Whether jobs of power-of-two ``sizes`` pack into ``num_nodes`` nodes as buddy blocks.

    The packing by decreasing size (:func:`_compact`) is built and each block checked:
    inside the cluster, aligned to its size, and within one node when it has at most
    ``gpus_per_node`` GPUs (whole nodes otherwise). The cost follows the number of jobs,
    not of GPUs, so that an evaluator stays fast on a cluster of 10^7 GPUs.
    """
    r = gpus_per_node
    blocks = _compact(_positive_sizes(list(sizes)), num_nodes, r, None)
    if blocks is None:
        return False
    for start, size in blocks.values():
        if start % min(size, r) or start + size > num_nodes * r:
            return False
        if size <= r and start // r != (start + size - 1) // r:
            return False
        if size > r and (start % r or size % r):
            return False
    return True


def _positive_sizes(sizes: Mapping[Hashable, int] | Sequence[int]) -> dict[Hashable, int]:
    """Job -> GPU count of the jobs given GPUs; every count a power of two."""
    if not isinstance(sizes, Mapping):
        sizes = dict(enumerate(sizes))
    out = {k: int(s) for k, s in sizes.items() if int(s) > 0}
    for k, s in out.items():
        if not is_power_of_two(s):
            raise ValueError(f"job {k!r}: {s} GPUs is not a power of two")
    return out


def _keep_previous_blocks(
    prev: Mapping[Hashable, tuple[int, int]],
    sizes: Mapping[Hashable, int],
    free: list[bool],
    num_nodes: int,
    r: int,
) -> dict[Hashable, tuple[int, int]]:
    """Keep each job of unchanged size in its previous block while that is still valid.

    Largest jobs first; marks the kept GPUs busy in ``free``.
    """
    blocks: dict[Hashable, tuple[int, int]] = {}
    for k in sorted(prev, key=lambda k: -sizes[k]):
        start, s = prev[k]
        aligned = start % min(s, r) == 0 and start + s <= num_nodes * r
        if aligned and all(free[start : start + s]):
            blocks[k] = (start, s)
            free[start : start + s] = [False] * s
    return blocks


def _place_moved_jobs(
    sizes: Mapping[Hashable, int],
    blocks: dict[Hashable, tuple[int, int]],
    free: list[bool],
    powered: set[int],
    num_nodes: int,
    r: int,
) -> bool:
    """Place the jobs not kept in place, largest first, into free buddy blocks.

    Updates ``blocks``, ``free`` and ``powered``; ``False`` when some job finds no
    block (or its nodes are not contiguous), so that the caller compacts instead.
    """
    for k in sorted((k for k in sizes if k not in blocks), key=lambda k: (-sizes[k], str(k))):
        s = sizes[k]
        if s >= r:
            best = _free_whole_nodes(s, free, powered, num_nodes, r)
        else:
            best = _best_fit_block(s, free, powered, num_nodes, r)
        if best is None:
            return False
        for start, size in best:
            free[start : start + size] = [False] * size
            powered.add(start // r)
        # A multi-node job is recorded by its first node; its nodes are contiguous only
        # when compacted, so the caller falls back to compaction otherwise.
        if len(best) > 1 and not _contiguous(best):
            return False
        blocks[k] = (best[0][0], s)
    return True


def _free_whole_nodes(
    s: int, free: list[bool], powered: set[int], num_nodes: int, r: int
) -> list[tuple[int, int]] | None:
    """``s / r`` wholly free nodes for a job of ``s >= r`` GPUs, unpowered ones last."""
    nodes = [v for v in range(num_nodes) if all(free[v * r : (v + 1) * r])]
    nodes.sort(key=lambda v: (v not in powered, v))
    if len(nodes) < s // r:
        return None
    return [(v * r, r) for v in nodes[: s // r]]


def _best_fit_block(
    s: int, free: list[bool], powered: set[int], num_nodes: int, r: int
) -> list[tuple[int, int]] | None:
    """An aligned block of ``s < r`` GPUs in the fullest powered node (best fit), else
    in a new node: the first free aligned block of each node, least free GPUs first."""
    cands = []
    for v in range(num_nodes):
        seg = free[v * r : (v + 1) * r]
        for off in range(0, r, s):
            if all(seg[off : off + s]):
                cands.append((v not in powered, sum(seg), v, off))
                break
    if not cands:
        return None
    _, _, v, off = min(cands)
    return [(v * r + off, s)]


def _contiguous(segments: list[tuple[int, int]]) -> bool:
    return all(a[0] + a[1] == b[0] for a, b in itertools.pairwise(segments))
