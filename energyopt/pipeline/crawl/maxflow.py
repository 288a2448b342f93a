"""Minimum s-t cut of a graph whose edges carry flow lower and upper bounds.

Perseus Appendix E.2, Algorithm 3: add a super source s' and super sink t', give
every edge capacity ``u - l``, route the lower bounds through s' and t', close the
circulation with an infinite t -> s edge, and look for a flow that saturates s'.
Such a flow is a feasible flow of the original graph; a second maximum flow from
s to t in its residual graph makes it maximal, and the nodes still reachable
from s in the final residual graph are the source side of a minimum cut (the
max-flow min-cut theorem holds with lower bounds; Ford and Fulkerson, Ch. 1.9).

Both maximum flows run in OR-Tools' compiled ``SimpleMaxFlow`` (push-relabel),
which needs integer capacities: finite capacities are scaled so that their sum
is 2**40 and rounded; infinite ones become 2**50, above any finite cut. The
rounding error of a cut is at most half a unit per edge, i.e. a relative 2**-41
per edge of the total finite capacity, far below the noise of measured energies.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from ortools.graph.python import max_flow

#: Sum of the finite capacities after scaling.
_FINITE_TOTAL = 2**40
#: Integer stand-in for an infinite capacity: above any finite cut.
_INF_INT = 2**50


@dataclasses.dataclass(frozen=True)
class MinCut:
    """Outcome of :func:`min_cut_with_lower_bounds`.

    Attributes
    ----------
    status
        ``"ok"``; ``"infeasible"`` when no flow meets the lower bounds (the cut
        problem is then unbounded below); ``"infinite"`` when every s-t cut
        crosses an infinite-capacity edge forward.
    source_side
        Boolean mask of the nodes on the source side (``None`` unless ``ok``).
    """

    status: str
    source_side: np.ndarray | None = None


def _edge_arrays(
    tail: np.ndarray, head: np.ndarray, lower: np.ndarray, upper: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The edges as int64 endpoints and float bounds, as every cut routine reads them."""
    return (
        np.asarray(tail, dtype=np.int64),
        np.asarray(head, dtype=np.int64),
        np.asarray(lower, dtype=float),
        np.asarray(upper, dtype=float),
    )


def min_cut_with_lower_bounds(
    num_nodes: int,
    tail: np.ndarray,
    head: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    source: int,
    sink: int,
) -> MinCut:
    """Source side of a minimum cut; cut value ``sum(upper forward) - sum(lower backward)``.

    Parameters
    ----------
    num_nodes
        Nodes are ``0 .. num_nodes - 1``.
    tail, head
        Edge endpoints (integer arrays of equal length).
    lower, upper
        Flow bounds per edge, ``0 <= lower <= upper``; ``upper`` may be ``inf``.
    source, sink
        The s and t of the cut.
    """
    tail, head, lower, upper = _edge_arrays(tail, head, lower, upper)
    if not (len(tail) == len(head) == len(lower) == len(upper)):
        raise ValueError("tail, head, lower and upper must have the same length")
    if np.any(lower < 0) or np.any(upper < lower) or np.any(~np.isfinite(lower)):
        raise ValueError("flow bounds must satisfy 0 <= lower <= upper, lower finite")
    if not (0 <= source < num_nodes and 0 <= sink < num_nodes) or source == sink:
        raise ValueError(f"source = {source}, sink = {sink}: must be distinct nodes")
    inf = ~np.isfinite(upper)
    finite_total = float(lower.sum() + upper[~inf].sum())
    scale = _FINITE_TOTAL / finite_total if finite_total > 0 else 1.0
    lo = np.rint(lower * scale).astype(np.int64)
    up = np.where(inf, _INF_INT, np.rint(np.where(inf, 0.0, upper) * scale).astype(np.int64))
    span = np.maximum(up - lo, 0)
    span[inf] = _INF_INT

    # Stage 1 (Algorithm 3, lines 1-10): a feasible flow through s' and t'.
    need = int(lo.sum())
    if need > 0:
        s1, t1 = num_nodes, num_nodes + 1
        into = np.bincount(head, weights=lo, minlength=num_nodes).astype(np.int64)
        out = np.bincount(tail, weights=lo, minlength=num_nodes).astype(np.int64)
        vin, vout = np.flatnonzero(into), np.flatnonzero(out)
        g1 = max_flow.SimpleMaxFlow()
        arcs = g1.add_arcs_with_capacity(tail, head, span)
        g1.add_arcs_with_capacity(np.full(len(vin), s1), vin, into[vin])
        g1.add_arcs_with_capacity(vout, np.full(len(vout), t1), out[vout])
        g1.add_arc_with_capacity(sink, source, _INF_INT)
        if g1.solve(s1, t1) != g1.OPTIMAL:
            raise ArithmeticError("max flow (stage 1) did not solve to optimality")
        if g1.optimal_flow() < need:
            return MinCut("infeasible")
        f_edge = np.asarray(g1.flows(arcs), dtype=np.int64)
    else:
        f_edge = np.zeros(len(tail), dtype=np.int64)

    # Stage 2 (lines 11-16): augment s -> t in the residual graph of that flow.
    g2 = max_flow.SimpleMaxFlow()
    g2.add_arcs_with_capacity(
        np.concatenate([tail, head]),
        np.concatenate([head, tail]),
        np.concatenate([span - f_edge, f_edge]),
    )
    if g2.solve(source, sink) != g2.OPTIMAL:
        raise ArithmeticError("max flow (stage 2) did not solve to optimality")
    side = np.zeros(num_nodes, dtype=bool)
    side[np.asarray(g2.get_source_side_min_cut(), dtype=np.int64)] = True
    if np.any(inf & side[tail] & ~side[head]):
        return MinCut("infinite")
    return MinCut("ok", side)


def min_cut_one_flow(
    num_nodes: int,
    tail: np.ndarray,
    head: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    source: int,
    sink: int,
    *,
    check: bool = True,
) -> MinCut:
    """The same minimum cut as :func:`min_cut_with_lower_bounds`, with one maximum flow.

    For a source side S with sink side T, the cut value is
    ``sum_fwd u - sum_bwd l = sum_fwd (u - l) + sum_{v in T} b(v)`` with
    ``b(v) = (lower bounds into v) - (lower bounds out of v)``: the lower bounds of
    arcs inside S or inside T cancel. The node term is a plain cut term: an arc
    ``s -> v`` of capacity ``b(v)`` when positive (paid when v is in T), an arc
    ``v -> t`` of capacity ``-b(v)`` when negative (paid when v is in S, up to a
    constant). So one maximum flow on capacities ``u - l`` plus those arcs finds
    the minimum cut. Unlike Algorithm 3 this never reports "infeasible": a cut
    of negative value (no feasible flow) is simply the minimum, the step that
    lowers the energy while shortening the iteration.

    The steps: scale to integers (:func:`_one_flow_capacities`), move the lower bounds into
    node terms (:func:`_lower_bound_node_terms`), one maximum flow
    (:func:`_one_flow_source_side`), then reject a cut crossing an infinite arc.

    Parameters
    ----------
    num_nodes
        Nodes are ``0 .. num_nodes - 1``.
    tail, head
        Edge endpoints (integer arrays of equal length).
    lower, upper
        Flow bounds per edge, ``0 <= lower <= upper``; ``upper`` may be ``inf``.
    source, sink
        The s and t of the cut.
    check
        Validate the flow bounds; callers that build valid bounds skip it.

    Returns
    -------
    MinCut
        ``"ok"`` with the source side, or ``"infinite"``; never ``"infeasible"``.
    """
    tail, head, lower, upper = _edge_arrays(tail, head, lower, upper)
    if check and (np.any(lower < 0) or np.any(upper < lower) or np.any(~np.isfinite(lower))):
        raise ValueError("flow bounds must satisfy 0 <= lower <= upper, lower finite")
    inf = ~np.isfinite(upper)
    lo, span = _one_flow_capacities(lower, upper, inf)
    b = _lower_bound_node_terms(tail, head, lo, num_nodes)
    side = _one_flow_source_side(num_nodes, tail, head, span, b, source, sink)
    if (inf & side[tail] & ~side[head]).any():
        return MinCut("infinite")
    return MinCut("ok", side)


class OneFlowCutter:
    """:func:`min_cut_one_flow` (no input checks) for calls that share arcs.

    A crawl asks for one minimum cut per step, and between two steps the arcs
    (``num_nodes``, ``tail``, ``head``, ``source``, ``sink``) rarely change, only the
    bounds do. While they stay, one OR-Tools ``SimpleMaxFlow`` keeps a reduced
    network (:meth:`_build`) and each call only rewrites its capacities, which are
    :func:`min_cut_one_flow`'s, computed by the same functions. The cut is
    exactly :func:`min_cut_one_flow`'s: its source side is what the source reaches
    in the residual graph of a maximum flow, the smallest source side of a minimum
    cut, the intersection of them all (the same set for every maximum flow and
    every order of the arcs), and the reductions keep that set:

    - A node ``y`` (neither source nor sink) whose only arc in is ``x -> y`` with
      bounds ``(0, inf)`` joins ``x``'s group (:func:`_merged_groups`). Were ``y`` on
      a source side without ``x``, moving it to the sink side would cost nothing
      (its arc in turns internal, its arcs out turn internal or backward, and its
      node term, which can only be ``y -> sink``, is no longer paid), so the
      smallest source side keeps them together, and the merged network's minimum
      cuts are the original ones that keep every group together, the smallest
      among them. A group's node term is its members' summed ``b(v)``: for either
      side of the cut that moves the value of every cut by one constant. The arc
      ``x -> y`` carries no lower bound, so no ``b(v)`` changes; should a later call
      give it one, or a finite capacity, the network is built anew. When every cut
      is infinite, an s-t path of ``(0, inf)`` arcs exists, which merging keeps, so
      the answer stays ``"infinite"``.
    - Node-term arcs ``source -> g`` and ``g -> sink`` are added as terms first ask
      for them and then kept, with capacity zero while their term is zero: an arc
      of capacity zero is in no residual graph.
    - Nodes touched by no arc are left out; they are never on the source side.
    """

    def __init__(self) -> None:
        self._key: tuple | None = None
        self._tail = self._head = np.zeros(0, dtype=np.int64)
        #: Arcs merged away (free while the network stands) and arcs kept.
        self._merged = self._kept = np.zeros(0, dtype=np.int64)
        #: Network node of every node (touched by no arc: ``self._n``, a dummy).
        self._node = np.zeros(0, dtype=np.int64)
        self._n = 0
        #: Network nodes of every arc's tail and head, and of the kept arcs'.
        self._at = self._ah = self._kt = self._kh = np.zeros(0, dtype=np.int64)
        #: Node-term arcs: their network node and sign (+1: ``source -> g``, -1: ``g -> sink``).
        self._term_node = self._term_sign = np.zeros(0, dtype=np.int64)
        self._has = np.zeros((2, 0), dtype=bool)  # [has source -> g, has g -> sink]
        self._s = self._t = 0
        self._flow: Any = None
        #: Networks built so far (one per change of the arcs).
        self.builds = 0

    def __call__(
        self,
        num_nodes: int,
        tail: np.ndarray,
        head: np.ndarray,
        lower: np.ndarray,
        upper: np.ndarray,
        source: int,
        sink: int,
    ) -> MinCut:
        """The minimum cut of :func:`min_cut_one_flow` (same arguments, ``check=False``)."""
        tail, head, lower, upper = _edge_arrays(tail, head, lower, upper)
        inf = ~np.isfinite(upper)
        lo, span = _one_flow_capacities(lower, upper, inf)
        if not self._same_arcs(num_nodes, tail, head, lower, inf, source, sink):
            self._build(num_nodes, tail, head, lower, inf, source, sink)
        b = self._node_terms(lo)
        self._add_term_arcs(b)
        caps = np.concatenate(
            [span[self._kept], np.maximum(b[self._term_node] * self._term_sign, 0)]
        )
        g = self._flow
        g.set_arcs_capacity(np.arange(len(caps), dtype=np.int32), caps)
        if g.solve(self._s, self._t) != g.OPTIMAL:
            raise ArithmeticError("max flow did not solve to optimality")
        reached = np.zeros(self._n + 1, dtype=bool)
        reached[np.asarray(g.get_source_side_min_cut(), dtype=np.int64)] = True
        # Merged arcs lie inside a network node: only kept arcs can cross the cut.
        if (inf[self._kept] & reached[self._kt] & ~reached[self._kh]).any():
            return MinCut("infinite")
        return MinCut("ok", reached[self._node])

    def _node_terms(self, lo: np.ndarray) -> np.ndarray:
        """``b`` of each network node: the lower bounds into its members minus those out.

        The same integers as the sum of :func:`_lower_bound_node_terms` over the
        members (sums of integers below 2**53 are exact).
        """
        n = self._n
        into = np.bincount(self._ah, weights=lo, minlength=n + 1)
        out = np.bincount(self._at, weights=lo, minlength=n + 1)
        return (into[:n] - out[:n]).astype(np.int64)

    def _add_term_arcs(self, b: np.ndarray) -> None:
        """Add the node-term arcs that ``b`` asks for and the network lacks."""
        pos = np.flatnonzero((b > 0) & ~self._has[0])
        neg = np.flatnonzero((b < 0) & ~self._has[1])
        if not (len(pos) or len(neg)):
            return
        self._has[0, pos] = True
        self._has[1, neg] = True
        tails = np.concatenate([np.full(len(pos), self._s), neg])
        heads = np.concatenate([pos, np.full(len(neg), self._t)])
        self._flow.add_arcs_with_capacity(tails, heads, np.zeros(len(tails), dtype=np.int64))
        self._term_node = np.concatenate([self._term_node, pos, neg])
        sign = np.concatenate(
            [np.ones(len(pos), dtype=np.int64), -np.ones(len(neg), dtype=np.int64)]
        )
        self._term_sign = np.concatenate([self._term_sign, sign])

    def _same_arcs(
        self,
        num_nodes: int,
        tail: np.ndarray,
        head: np.ndarray,
        lower: np.ndarray,
        inf: np.ndarray,
        source: int,
        sink: int,
    ) -> bool:
        """Whether the kept network has these arcs, its merged arcs still ``(0, inf)``."""
        if self._key != (num_nodes, source, sink):
            return False
        if not (np.array_equal(tail, self._tail) and np.array_equal(head, self._head)):
            return False
        m = self._merged
        return not len(m) or (bool(inf[m].all()) and not lower[m].any())

    def _build(
        self,
        num_nodes: int,
        tail: np.ndarray,
        head: np.ndarray,
        lower: np.ndarray,
        inf: np.ndarray,
        source: int,
        sink: int,
    ) -> None:
        """A new reduced network for these arcs (class doc): groups and kept arcs."""
        group, merged = _merged_groups(num_nodes, tail, head, lower, inf, source, sink)
        kept = np.flatnonzero(~merged & (group[tail] != group[head]))
        # Network nodes, in the order of their groups: those that some kept arc
        # touches, and the source's and the sink's.
        used = np.zeros(num_nodes + 1, dtype=bool)
        used[group[tail[kept]]] = used[group[head[kept]]] = True
        used[group[[source, sink]]] = True
        n = int(used.sum())
        rank = np.cumsum(used) - 1
        rank[~used] = n
        node = rank[group]
        self._node, self._n, self._at, self._ah = node, n, node[tail], node[head]
        self._kt, self._kh = node[tail[kept]], node[head[kept]]
        self._s, self._t = int(node[source]), int(node[sink])
        self._flow = max_flow.SimpleMaxFlow()
        self._flow.add_arcs_with_capacity(self._kt, self._kh, np.zeros(len(kept), dtype=np.int64))
        self._term_node = self._term_sign = np.zeros(0, dtype=np.int64)
        self._has = np.zeros((2, n), dtype=bool)
        self._key = (num_nodes, source, sink)
        self._tail, self._head = tail.copy(), head.copy()  # the caller may reuse its arrays
        self._merged, self._kept = np.flatnonzero(merged), kept
        self.builds += 1


#: Merge only when it removes at least this share of the network's nodes (see below).
MERGE_SHARE = 0.25


def _merged_groups(
    num_nodes: int,
    tail: np.ndarray,
    head: np.ndarray,
    lower: np.ndarray,
    inf: np.ndarray,
    source: int,
    sink: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Groups of :class:`OneFlowCutter`'s merge: each node's representative, merged arcs.

    A node other than the source and the sink whose only arc in is a ``(0, inf)``
    arc joins that arc's tail; following the tails (by pointer jumping) gives each
    node the first node of its chain. Nothing merges when only a cycle of such
    arcs (which a DAG's network cannot have) keeps the jumps from settling, or when
    fewer than :data:`MERGE_SHARE` of the nodes would merge: OR-Tools' maximum flow
    ran 2-4x faster on merged chain-like Critical DAGs of the GPT-3 crawl (half the
    nodes merge) but up to 2x slower on its wide ones (a tenth merge).
    """
    indeg = np.bincount(head, minlength=num_nodes)
    merged = inf & (lower == 0) & (indeg[head] == 1) & (head != source) & (head != sink)
    touched = (indeg + np.bincount(tail, minlength=num_nodes)) > 0
    if merged.sum() < MERGE_SHARE * touched.sum():
        return np.arange(num_nodes), np.zeros(len(tail), dtype=bool)
    group = np.arange(num_nodes)
    group[head[merged]] = tail[merged]
    for _ in range(max(num_nodes, 2).bit_length() + 1):
        jumped = group[group]
        if np.array_equal(jumped, group):
            return group, merged
        group = jumped
    return np.arange(num_nodes), np.zeros(len(tail), dtype=bool)


def _one_flow_capacities(
    lower: np.ndarray, upper: np.ndarray, inf: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Integer lower bounds and arc capacities ``u - l`` of the one-flow network.

    The finite upper bounds plus twice the lower bounds are scaled to sum to
    ``_FINITE_TOTAL``: that bounds the network's finite capacities (the ``u - l``
    and the node terms, to which each lower bound adds at most ``2 l``), so no
    finite cut reaches ``_INF_INT``, the stand-in for an infinite capacity.

    Returns
    -------
    lo, span : numpy.ndarray
        Scaled lower bounds and capacities ``max(u - l, 0)`` (int64).
    """
    finite_total = float(2 * lower.sum() + upper[~inf].sum())
    scale = _FINITE_TOTAL / finite_total if finite_total > 0 else 1.0
    lo = np.rint(lower * scale).astype(np.int64)
    span = np.maximum(np.rint(np.where(inf, 0.0, upper) * scale).astype(np.int64) - lo, 0)
    span[inf] = _INF_INT
    return lo, span


def _lower_bound_node_terms(
    tail: np.ndarray, head: np.ndarray, lo: np.ndarray, num_nodes: int
) -> np.ndarray:
    """``b(v)``: the (integer) lower bounds into each node minus those out of it."""
    b = np.bincount(head, weights=lo, minlength=num_nodes)
    b -= np.bincount(tail, weights=lo, minlength=num_nodes)
    return np.rint(b).astype(np.int64)


def _one_flow_source_side(
    num_nodes: int,
    tail: np.ndarray,
    head: np.ndarray,
    span: np.ndarray,
    b: np.ndarray,
    source: int,
    sink: int,
) -> np.ndarray:
    """Source side of the minimum cut of the arcs plus the node terms, by one flow.

    Arcs ``tail -> head`` of capacity ``span``, ``source -> v`` of capacity
    ``b(v)`` where positive and ``v -> sink`` of ``-b(v)`` where negative, in one
    OR-Tools ``SimpleMaxFlow``; the source side is what the source still reaches
    in the residual graph.
    """
    pos = np.flatnonzero(b > 0)
    neg = np.flatnonzero(b < 0)
    g = max_flow.SimpleMaxFlow()
    g.add_arcs_with_capacity(tail, head, span)
    g.add_arcs_with_capacity(np.full(len(pos), source), pos, b[pos])
    g.add_arcs_with_capacity(neg, np.full(len(neg), sink), -b[neg])
    if g.solve(source, sink) != g.OPTIMAL:
        raise ArithmeticError("max flow did not solve to optimality")
    side = np.zeros(num_nodes, dtype=bool)
    side[np.asarray(g.get_source_side_min_cut(), dtype=np.int64)] = True
    return side
