"""Planned durations to clocks, for many plans at once.

The hull LP (:mod:`~energyopt.pipeline.crawl.hullpath`) gives every computation a
planned duration that usually falls between two measured options. The fitter
turns durations into clocks: each computation runs the slowest Pareto option
that fits in its window (the earliest start given its predecessors' clocks, and
the latest finish under the planned durations), in topological order, then a
second pass gives leftover slack back in reverse order. Every plan meets its
sample time with *measured* times, and the rounding carries the slack of one
computation to the next, so a chain of equal computations mixes two neighbouring
clocks where the LP sits between them. Options are ranked by measured time,
never by clock.

Inside the fitter the computations are renumbered level by level (the DAG's depth
levels, one after another), so that each level is one contiguous block of rows
and every pass moves a whole level of computations and all plans with a few
array operations (the computations of a level depend on none of each other).
A pass that starts from a plan (every pass but the first), or from guessed options
(the first pass of the crawl), moves a position one option slower where that one
fits, with a few array operations per level, and searches the options only of the
computations where some position must move further; the others keep theirs.
The work arrays live as long as the fitter, so that chunk after chunk of plans
reuses the same memory. Inside the fitter an option is named by its *flat
position*: its index into the flat tables (:meth:`ClockFitter._flat_tables`), its
table's row start plus its Pareto position, so that its time, the next slower
option's time, its energy and its option index are each one gather away.
"""

from __future__ import annotations

import numpy as np

from energyopt.pipeline.dag import CompactDag
from energyopt.pipeline.instance import PemInstance

#: A window this much (relatively) above an option's time still fits it: rounding slack.
_FIT_RTOL = 1e-12


class ClockFitter:
    """Planned durations to clocks, for many plans at once (module doc, last paragraphs).

    Arrays are laid out computations x plans, so that each computation's row is
    contiguous. The public methods take and give computations in the instance's
    order; the ``*_rows`` methods and the passes work in level order (``order``:
    the computation of each row, ``rank``: the row of each computation), on flat
    positions (module doc).
    """

    def __init__(self, instance: PemInstance, dag: CompactDag | None = None) -> None:
        dag = dag if dag is not None else CompactDag(instance)
        n = dag.n
        self.n = n
        self.levels = [nodes for nodes, _ in dag.levels]
        self.order = np.concatenate(self.levels) if n else np.zeros(0, dtype=np.int64)
        self.rank = np.empty(n + 1, dtype=np.int64)
        self.rank[self.order] = np.arange(n)
        self.rank[n] = n  # the sentinel row stays the sentinel
        names = sorted(instance.tables)
        which = {nm: k for k, nm in enumerate(names)}
        self.table_of = [which[c.table] for c in instance.computations]
        self.times: list[np.ndarray] = []
        self.energies: list[np.ndarray] = []
        self.index: list[np.ndarray] = []
        self.inverse: list[np.ndarray] = []  # option index -> Pareto position (-1: none)
        for nm in names:
            tb = instance.tables[nm]
            keep, _ = tb.pareto(instance.p_blocking_w)  # fastest first, dearest first
            idx = np.asarray(keep, dtype=np.int64)
            self.times.append(np.asarray(tb.time_s, dtype=float)[idx])
            self.energies.append(np.asarray(tb.energy_j, dtype=float)[idx])
            self.index.append(idx)
            inv = np.full(len(tb), -1, dtype=np.int64)
            inv[idx] = np.arange(len(idx))
            self.inverse.append(inv)
        tk = np.asarray(self.table_of, dtype=np.int64)
        self._flat_tables()
        self._level_arrays(dag, tk)
        self._work: dict[str, np.ndarray] = {}

    def _flat_tables(self) -> None:
        """Every table's Pareto times, energies and option indices in flat arrays, a row each.

        Each row has at least two padding entries after the table's slowest option,
        so that "the next" and "the second next slower option" are always in the row
        (:func:`_step_up`). Their time is NaN: no window fits them, not even an
        infinite one (whose slowest fitting option is the table's slowest).
        """
        self.width = max((len(t) for t in self.times), default=0) + 2
        self.flat_times = _padded(self.times, self.width, np.nan)
        self.flat_energies = _padded(self.energies, self.width, np.inf)
        # Option indices fit in 16 bits (checked): plans are moved in that width.
        self.flat_index = _padded(self.index, self.width, -1).astype(np.int16)
        if any(len(ix) and ix.max() >= 2**15 for ix in self.index):
            raise ValueError("ClockFitter: a table has more than 32767 options")
        self.inv_width = max((len(t) for t in self.inverse), default=1)
        # Option index -> flat position (-1: not Pareto-optimal).
        flat = [np.where(inv >= 0, inv + k * self.width, -1) for k, inv in enumerate(self.inverse)]
        self.flat_inverse = _padded(flat, self.inv_width, -1)

    def _level_arrays(self, dag: CompactDag, tk: np.ndarray) -> None:
        """Neighbours, tables and per-level slices in level order (the passes' layout)."""
        n = self.n
        mp = max((len(p) for p in dag.preds), default=0)
        ms = max((len(s) for s in dag.succs), default=0)
        # Padded neighbour lists in rows; row n is a sentinel (finish 0 / latest start T).
        pred = np.full((n + 1, max(mp, 1)), n, dtype=np.int64)
        succ = np.full((n + 1, max(ms, 1)), n, dtype=np.int64)
        for v in range(n):
            pred[v, : len(dag.preds[v])] = dag.preds[v]
            succ[v, : len(dag.succs[v])] = dag.succs[v]
        pred, succ = self.rank[pred[self.order]], self.rank[succ[self.order]]
        # The rows without successors: every finish is at most a sink's (durations are
        # nonnegative), so a makespan is the largest finish of these rows alone.
        self.sinks = np.flatnonzero((succ == n).all(axis=1))
        self.row_table = tk[self.order]
        self.row_offset = (self.row_table * self.width)[:, None]  # each row's start, flat
        ends = np.cumsum([len(nodes) for nodes in self.levels], dtype=np.int64)
        # Per level: its rows, neighbours (by column, :func:`_columns`), offsets into the
        # flat tables and Pareto times.
        self.spans = [
            (
                slice(lo, hi),
                _columns(pred[lo:hi]),
                _columns(succ[lo:hi]),
                self.row_offset[lo:hi],
                [self.times[k] for k in self.row_table[lo:hi].tolist()],
            )
            for lo, hi in zip([0, *ends[:-1].tolist()], ends.tolist())
        ]

    def _scratch(self, name: str, rows: int, cols: int, dtype=float) -> np.ndarray:
        """Work array ``name`` (rows x cols, C order, contents undefined), kept between calls.

        Valid until the next call that uses the same name: the memory is reused
        chunk after chunk instead of fresh pages each time.
        """
        size = rows * cols
        buf = self._work.get(name)
        if buf is None or buf.size < size or buf.dtype != dtype:
            buf = self._work[name] = np.empty(size, dtype=dtype)
        return buf[:size].reshape(rows, cols)

    def fit_rows(
        self,
        durations_s: np.ndarray,
        cap_s: np.ndarray | None = None,
        passes: int = 2,
        guess: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Flat positions (module doc) meeting each column's planned makespan,
        computations in level order (rows ``order``), in and out.

        ``durations_s`` is computations x plans (seconds). Each plan meets, with
        measured times, the makespan of its planned durations, or ``cap_s`` where
        that is smaller (at least the fastest makespan). The first pass bounds the
        windows by the latest finishes under the planned durations; a computation
        whose window is shorter than its fastest option runs that option (by
        induction over the topological order every finish then stays at most its
        latest finish under the fastest options, so the plan still meets ``cap_s``).
        Further passes (``passes`` in all, alternating direction) give each
        computation the slack the plan itself leaves it (:meth:`_relax`).

        ``guess``: flat positions the first pass likely picks (any positions in each
        row's table will do; they only save searches where right). A C-ordered
        int64 ``guess`` is overwritten: the positions are fitted in place (no copy).
        Returns the flat positions and their measured times (s): work arrays, valid
        until the fitter's next call.
        Map them to option indices with :meth:`option_rows`.
        """
        n, P = durations_s.shape
        T, pos, t = self._fit_start(durations_s, cap_s, guess)
        es = self._scratch("es", n, P)
        lf = self._latest_finish(durations_s, T)
        self._forward(pos, t, lf, T, es_out=es, guess=guess)
        return self._relax(pos, T, passes - 1, t, es)[:2]

    def _fit_start(
        self, durations_s: np.ndarray, cap_s: np.ndarray | None, guess: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The fits' planned makespans (capped), position array (``guess`` itself where it
        is a C-ordered int64 array of the right shape) and times array."""
        n, P = durations_s.shape
        T = self.makespans_rows(durations_s)
        if cap_s is not None:
            T = np.minimum(T, cap_s)
        own = guess is not None and guess.shape == (n, P) and guess.dtype == np.int64
        if own and guess.flags.c_contiguous:
            pos = guess
        else:
            pos = self._scratch("pos", n, P, np.int64)
        return T, pos, self._scratch("t", n, P)

    def fit_down_rows(
        self,
        durations_s: np.ndarray,
        cap_s: np.ndarray | None = None,
        passes: int = 2,
        guess: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`fit_rows` that rounds every duration down first, then gives slack back.

        Each computation first runs the slowest option within its own planned
        duration (never more, so the plan meets the planned makespan); then the
        passes of :meth:`_relax`, latest computations first, hand the slack that the
        rounding left back. :meth:`fit_rows` instead lets the earliest computations
        take it as they come, in topological order. Neither dominates (each is up
        to a few tenths of a percent cheaper than the other somewhere on the floored
        GPT-3 A100 profile at 8 x 96: ``benchmarks/pem_authors.py --sections fits``),
        so the crawl keeps both plans.
        Same arguments and returns as :meth:`fit_rows` (``guess`` is overwritten
        when it is a C-ordered int64 array of the right shape).
        """
        n, P = durations_s.shape
        T, pos, t = self._fit_start(durations_s, cap_s, guess)
        if guess is not None and guess is not pos:
            pos[...] = guess
        room = self._scratch("room", n, P)
        np.copyto(room, durations_s)
        pick = _slowest_fitting if guess is None else _guessed_fitting
        for rows, _, _, off, tv in self.spans:
            pick(tv, self.flat_times, off, room[rows], pos[rows], t[rows])
        return self._relax(pos, T, passes, t)[:2]

    def _relax(
        self,
        pos: np.ndarray,
        T: np.ndarray,
        passes: int,
        t: np.ndarray | None = None,
        es: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """Give slack back to plans (level-order flat positions, updated in place) within ``T``.

        Alternates a pass from the last computations backwards with one from the
        first forwards; each computation takes the slowest option that fits
        between its earliest start and its latest finish under the plan itself,
        never a faster one, so each pass keeps the plan within ``T``. ``t`` and
        ``es``, when given, are the plan's durations and earliest starts. Returns
        the positions, their times (s) and, when the last pass ran forwards, the
        plans' makespans.
        """
        if t is None:
            t = self._times_rows(pos)
        span = None
        for k in range(passes):
            if k % 2 == 0:
                # The backward pass leaves the latest finishes under its new durations.
                lf = self._backward(pos, t, T, es)
                es, span = None, None  # the backward pass changed the durations
            else:
                es = self._scratch("es", *pos.shape)
                span = self._forward(pos, t, lf, T, floor=True, es_out=es)
        return pos, t, span

    def relax_options(self, plans: np.ndarray, T: np.ndarray, out: np.ndarray) -> np.ndarray:
        """:meth:`_relax` (two passes) for plans as rows of option indices.

        Writes the new plans' rows into ``out`` and returns their makespans (s).
        """
        pos, _, span = self._relax(self.positions_rows(plans), T, 2)
        self.option_rows(pos, out)
        return span

    def makespans_rows(self, durations_s: np.ndarray) -> np.ndarray:
        """Makespan of each plan (column) of nonnegative durations in level order."""
        n, P = durations_s.shape
        fin = self._scratch("fin", n + 1, P)
        fin[n] = 0.0
        for rows, pred, *_ in self.spans:
            _reduce_rows(np.maximum, fin, pred, fin[rows])
            fin[rows] += durations_s[rows]
        return fin[self.sinks].max(axis=0)

    def sums_in_order(
        self, pos: np.ndarray, t: np.ndarray, idx: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Per plan, the option energies (J) and times (s) of level-order flat positions, summed.

        The sums run over the computations in the instance's order, one after
        another (:func:`sum_in_order`). ``idx``: the positions in the instance's
        order when known (what :meth:`option_rows` returns).
        """
        n, P = pos.shape
        rk = self.rank[:n]
        if idx is None:
            idx = self._flat_in_order(pos)
        e = np.take(self.flat_energies, idx, out=self._scratch("e", n, P), mode="clip")
        return sum_in_order(e), sum_in_order(np.take(t, rk, axis=0, out=self._scratch("e", n, P)))

    def positions_rows(self, plans: np.ndarray) -> np.ndarray:
        """Flat positions in level order (computations x plans) of rows of option indices."""
        P, n = plans.shape
        by_row = self._scratch("by_row", n, P, plans.dtype)
        transpose_into(plans, by_row)
        idx = self._scratch("idx", n, P, np.int64)
        inv_offset = self.row_table[:, None] * self.inv_width
        np.add(np.take(by_row, self.order, axis=0), inv_offset, out=idx)
        pos = np.take(self.flat_inverse, idx, out=self._scratch("pos", n, P, np.int64), mode="clip")
        if pos.size and pos.min() < 0:
            raise ValueError("positions: a plan uses an option that is not Pareto-optimal")
        return pos

    def option_rows(self, pos: np.ndarray, out: np.ndarray) -> np.ndarray:
        """Option indices of level-order flat positions, written as rows of plans into ``out``.

        The transposition runs on 16-bit indices (a quarter of the memory traffic).
        Returns the positions in the instance's order (a work array, for
        :meth:`sums_in_order`).
        """
        n, P = pos.shape
        idx = self._flat_in_order(pos)
        opt = np.take(self.flat_index, idx, out=self._scratch("opt", n, P, np.int16), mode="clip")
        transpose_into(opt, out)
        return idx

    def _flat_in_order(self, pos: np.ndarray) -> np.ndarray:
        """Level-order flat positions in the instance's order."""
        n, P = pos.shape
        return np.take(pos, self.rank[:n], axis=0, out=self._scratch("idx", n, P, np.int64))

    def _times_rows(self, pos: np.ndarray) -> np.ndarray:
        t = self._scratch("t", *pos.shape)
        return np.take(self.flat_times, pos, out=t, mode="clip")

    def _latest_finish(self, durations: np.ndarray, T: np.ndarray) -> np.ndarray:
        n, P = durations.shape
        start = self._scratch("start", n + 1, P)
        start[n] = T
        lf = self._scratch("lf", n, P)
        # Nonnegative durations: every latest start is at most T, the sentinel's, so the
        # successors' minimum is at most T already.
        for rows, _, succ, *_ in reversed(self.spans):
            _reduce_rows(np.minimum, start, succ, lf[rows])
            np.subtract(lf[rows], durations[rows], out=start[rows])
        return lf

    def _forward(
        self,
        pos: np.ndarray,
        t: np.ndarray,
        lf: np.ndarray,
        T: np.ndarray,
        floor: bool = False,
        es_out: np.ndarray | None = None,
        guess: np.ndarray | None = None,
    ) -> np.ndarray:
        """Earliest-first pass: each computation the slowest option ending by ``lf``.

        With ``floor``, never faster than its option in ``pos`` (``t`` its times);
        otherwise ``guess`` (when given) are the positions to try first. The
        earliest starts of the new plan go to ``es_out`` when given; returns the
        new plans' makespans.
        """
        n, P = pos.shape
        fin = self._scratch("fin", n + 1, P)
        fin[n] = 0.0
        if guess is not None and not floor and guess is not pos:
            pos[...] = guess
        pick = _slower_fitting if floor else _slowest_fitting if guess is None else _guessed_fitting
        if es_out is None:
            es_out = self._scratch("es_fw", n, P)
        room = self._scratch("room", n, P)
        for rows, pred, _, off, tv in self.spans:
            es = _reduce_rows(np.maximum, fin, pred, es_out[rows])
            np.subtract(lf[rows], es, out=room[rows])
            pick(tv, self.flat_times, off, room[rows], pos[rows], t[rows])
            np.add(es, t[rows], out=fin[rows])
        return fin[self.sinks].max(axis=0)

    def _backward(
        self, pos: np.ndarray, t: np.ndarray, T: np.ndarray, es: np.ndarray | None = None
    ) -> np.ndarray:
        """Latest-first pass: each computation the slack left between its neighbours.

        ``es``: the earliest starts under ``t`` when known (computed otherwise).
        Returns the latest finishes under the new durations within ``T`` (a work
        array): each level's are taken from its successors' final latest starts,
        the same operations in the same order as :meth:`_latest_finish` of the new
        ``t``, so the same values.
        """
        n, P = pos.shape
        if es is None:
            fin = self._scratch("fin", n + 1, P)
            fin[n] = 0.0
            es = self._scratch("es", n, P)
            for rows, pred, *_ in self.spans:
                _reduce_rows(np.maximum, fin, pred, es[rows])
                np.add(es[rows], t[rows], out=fin[rows])
        start = self._scratch("start", n + 1, P)
        start[n] = T
        lf, room = self._scratch("lf", n, P), self._scratch("room", n, P)
        for rows, _, succ, off, tv in reversed(self.spans):
            _reduce_rows(np.minimum, start, succ, lf[rows])  # at most T (_latest_finish)
            np.subtract(lf[rows], es[rows], out=room[rows])
            _slower_fitting(tv, self.flat_times, off, room[rows], pos[rows], t[rows])
            np.subtract(lf[rows], t[rows], out=start[rows])
        return lf


def _columns(neighbours: np.ndarray) -> list[slice | np.ndarray]:
    """A level's padded neighbour rows by column: a slice where a column is a run of
    consecutive rows (a view, no copy), its indices otherwise."""
    cols: list[slice | np.ndarray] = []
    for col in neighbours.T:
        step = np.diff(col)
        if len(col) and np.all(step == 1):
            cols.append(slice(int(col[0]), int(col[-1]) + 1))
        else:
            cols.append(np.ascontiguousarray(col))
    return cols


def _reduce_rows(op: np.ufunc, a: np.ndarray, cols: list, out: np.ndarray) -> np.ndarray:
    """``op`` (``np.maximum`` / ``np.minimum``) over the rows ``a[c]`` of each column ``c``
    (:func:`_columns`), into ``out``: the padded neighbour rows' extremum, row by row.

    Exact in any order (no rounding), so the same as the extremum over the gathered rows.
    """
    if len(cols) == 1:
        if isinstance(cols[0], slice):
            out[...] = a[cols[0]]
        else:
            np.take(a, cols[0], axis=0, out=out)
        return out
    op(a[cols[0]], a[cols[1]], out=out)
    for c in cols[2:]:
        op(out, a[c], out=out)
    return out


def sum_in_order(x: np.ndarray) -> np.ndarray:
    """Column sums of ``x``, adding row after row (never numpy's pairwise summation)."""
    if x.shape[1] == 1:  # numpy would sum a single column pairwise
        return np.cumsum(x[:, 0])[-1:] if len(x) else np.zeros(1)
    return x.sum(axis=0)


#: Rows per block of :func:`transpose_into`: a block's source rows and its slice of
#: the destination rows stay in the cache (about 7x faster than one strided copy).
_TRANSPOSE_BLOCK = 16


def transpose_into(src: np.ndarray, dst: np.ndarray) -> None:
    """``dst[...] = src.T``, a block of rows of ``src`` at a time (the values are copied as is)."""
    for lo in range(0, src.shape[0], _TRANSPOSE_BLOCK):
        dst[:, lo : lo + _TRANSPOSE_BLOCK] = src[lo : lo + _TRANSPOSE_BLOCK].T


def _padded(arrays: list[np.ndarray], width: int, fill) -> np.ndarray:
    """The arrays one after another, each padded with ``fill`` to ``width``: one flat array."""
    out = np.full((len(arrays), width), fill, dtype=arrays[0].dtype if arrays else float)
    for k, a in enumerate(arrays):
        out[k, : len(a)] = a
    return out.ravel()


def _slowest_fitting(
    times: list[np.ndarray],
    flat_times: np.ndarray,
    offset: np.ndarray,
    room: np.ndarray,
    pos_out: np.ndarray,
    t_out: np.ndarray,
) -> None:
    """Flat position (module doc) of the slowest option within ``room``, per plan.

    One level of computations (rows) at once: ``times`` holds each row's Pareto
    times (fastest first), ``offset`` each row's start in ``flat_times``. A slower
    Pareto option is cheaper in effective energy, so this is also the cheapest that
    fits; the fastest is the fallback. Writes into ``pos_out`` and ``t_out``;
    ``room`` is scaled in place.
    """
    room *= 1 + _FIT_RTOL
    for j, tv in enumerate(times):
        pos_out[j] = tv.searchsorted(room[j], side="right")
    pos_out += offset - 1
    np.maximum(pos_out, offset, out=pos_out)
    # mode="clip": with "raise" numpy copies through a buffer; every index is in range.
    np.take(flat_times, pos_out, out=t_out, mode="clip")


def _guessed_fitting(
    times: list[np.ndarray],
    flat_times: np.ndarray,
    offset: np.ndarray,
    room: np.ndarray,
    pos: np.ndarray,
    t: np.ndarray,
) -> None:
    """:func:`_slowest_fitting`, trying the positions in ``pos`` first.

    A guess is right where its option fits and the next slower one does not; one
    option too fast, it moves up one (:func:`_step_up`). Only the rows where some
    guess is further off are searched. Writes ``pos``, ``t``.
    """
    room *= 1 + _FIT_RTOL
    np.take(flat_times, pos, out=t, mode="clip")
    too_slow = t <= room
    np.logical_not(too_slow, out=too_slow)  # a NaN room: searched, as numpy sorts NaN last
    _step_up(times, flat_times, offset, room, pos, t, too_slow)


def _slower_fitting(
    times: list[np.ndarray],
    flat_times: np.ndarray,
    offset: np.ndarray,
    room: np.ndarray,
    pos: np.ndarray,
    t: np.ndarray,
) -> None:
    """:func:`_slowest_fitting`, never below the current positions ``pos`` (times ``t``).

    Updates ``pos`` and ``t`` in place. A position moves only where the next
    slower option fits: one option up (:func:`_step_up`), and
    the rows where some position moves further are searched; the others keep their
    options and times.
    """
    room *= 1 + _FIT_RTOL
    _step_up(times, flat_times, offset, room, pos, t, None)


def _step_up(
    times: list[np.ndarray],
    flat_times: np.ndarray,
    offset: np.ndarray,
    room: np.ndarray,
    pos: np.ndarray,
    t: np.ndarray,
    too_slow: np.ndarray | None,
) -> None:
    """Each position one option slower where that option fits in the scaled ``room``;
    the rows where one more fits, or (``too_slow``, the guesses' case) where an option
    does not fit, are searched (from the fastest with ``too_slow``, else from ``pos``).

    Where the option two up does not fit, the slowest fitting option (never below
    ``pos``) is ``pos`` or the next one, so one step is exact; a row search is ten
    times one step's cost per row. ``flat_times[1:]`` and ``flat_times[2:]`` are each
    flat position's next and second next slower option (padding NaN past a row's
    slowest, which fits no window, :meth:`ClockFitter._flat_tables`).
    """
    nxt = np.take(flat_times[1:], pos, mode="clip")
    up = nxt <= room
    if up.any():
        far = np.take(flat_times[2:], pos, mode="clip") <= room
        if too_slow is not None:
            far |= too_slow
        np.add(pos, up, out=pos)
        np.copyto(t, nxt, where=up)
    else:
        far = too_slow
    if far is not None:
        _search_rows(times, flat_times, offset, np.flatnonzero(far.any(axis=1)), room,
                     too_slow is not None, pos, t)  # fmt: skip


def _search_rows(
    times: list[np.ndarray],
    flat_times: np.ndarray,
    offset: np.ndarray,
    rows: np.ndarray,
    room: np.ndarray,
    from_fastest: bool,
    pos: np.ndarray,
    t: np.ndarray,
) -> None:
    """For each row in ``rows``: the slowest option within ``room``, never below the
    fastest (``from_fastest``) or else the row's current flat positions in ``pos``.
    Writes ``pos`` and ``t``."""
    for j in rows.tolist():
        p = times[j].searchsorted(room[j], side="right")
        start = int(offset[j, 0])
        p += start - 1
        np.maximum(p, start if from_fastest else pos[j], out=pos[j])
        np.take(flat_times, pos[j], out=t[j], mode="clip")
