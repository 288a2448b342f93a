"""Plain, computation-order versions of the default crawl's fast paths, for the tests.

The crawl itself works on computations in level order (:class:`ClockFitter`'s rows)
and on whole tables at once; these are the straightforward computations the tests
check it against, value for value.
"""

from __future__ import annotations

import numpy as np

from energyopt.pipeline.crawl.clockfit import ClockFitter
from energyopt.pipeline.crawl.hullpath import HullPath
from energyopt.pipeline.dag import CompactDag


def exact_seconds(path: HullPath, dq: np.ndarray) -> np.ndarray:
    """Durations in seconds (computations x plans); a duration at a hull vertex is
    that vertex's exact time rather than its rounded-up quanta."""
    ds = dq * path.quantum_s
    h = path.hulls
    for kt, rows in h.groups:
        vals = dq[rows]
        pos = np.minimum(np.searchsorted(h.q[kt], vals), len(h.q[kt]) - 1)
        hit = h.q[kt][pos] == vals
        r, c = np.nonzero(hit)
        ds[rows[r], c] = h.exact[kt][pos[r, c]]
    return ds


def flat(fitter: ClockFitter, pos: np.ndarray) -> np.ndarray:
    """Flat positions (the fitter's) of Pareto positions, computations in the instance's order."""
    return pos + fitter.width * np.asarray(fitter.table_of)[:, None]


def pareto(fitter: ClockFitter, pos: np.ndarray) -> np.ndarray:
    """Pareto positions of flat positions, computations in the instance's order."""
    return pos - fitter.width * np.asarray(fitter.table_of)[:, None]


def fit(fitter: ClockFitter, durations_s: np.ndarray, cap_s=None, passes: int = 2) -> np.ndarray:
    """:meth:`ClockFitter.fit_rows` on computations in the instance's order (Pareto positions)."""
    pos, _ = fitter.fit_rows(np.take(durations_s, fitter.order, axis=0), cap_s, passes)
    return pareto(fitter, pos[fitter.rank[: fitter.n]])


def relax(fitter: ClockFitter, pos: np.ndarray, T, passes: int = 2, t=None, es=None):
    """:meth:`ClockFitter._relax` on computations in the instance's order (Pareto positions
    ``pos`` updated)."""
    r = fitter.order
    got = fitter._relax(
        flat(fitter, pos)[r], T, passes, None if t is None else t[r], None if es is None else es[r]
    )
    pos[r] = got[0]
    pos[...] = pareto(fitter, pos)
    return pos


def times_of(fitter: ClockFitter, pos: np.ndarray) -> np.ndarray:
    """Measured times (s) of Pareto positions (computations x plans), node by node."""
    return np.array([fitter.times[fitter.table_of[v]][pos[v]] for v in range(fitter.n)])


def options(fitter: ClockFitter, pos: np.ndarray) -> np.ndarray:
    """Option indices (into the instance's tables) of Pareto positions, node by node."""
    return np.array([fitter.index[fitter.table_of[v]][pos[v]] for v in range(fitter.n)])


def event_durations(path: HullPath, k0: int, k1: int, d_start: np.ndarray) -> np.ndarray:
    """Durations (quanta) at the starts of events ``k0 .. k1 - 1`` from those at ``k0``."""
    delta = path.delta[k0 : k1 - 1]
    out = np.empty((len(delta) + 1, len(d_start)), dtype=np.int64)
    out[0] = d_start
    np.multiply(delta[:, None], path.rate[k0 : k1 - 1], out=out[1:])
    # Integers: the running sum in place is exact, whatever the order of the additions.
    return np.cumsum(out, axis=0, out=out)


def random_positions(fitter: ClockFitter, rng: np.random.Generator, plans: int) -> np.ndarray:
    """Random Pareto positions (computations x ``plans``) for the fitter's tables."""
    sizes = np.asarray([len(fitter.times[k]) for k in fitter.table_of])
    return (rng.random((fitter.n, plans)) * sizes[:, None]).astype(np.int64)


def plain_starts(dag: CompactDag, t: np.ndarray) -> np.ndarray:
    """Earliest starts of every plan (computations x plans), node by node."""
    es = np.zeros_like(t)
    for v in dag.order:
        for p in dag.preds[v]:
            es[v] = np.maximum(es[v], es[p] + t[p])
    return es
