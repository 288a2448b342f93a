"""The shortcuts of the exact crawl's clock fitting and scoring, value for value (issue 17).

``pipeline/crawl/clockfit.py`` fits whole DAG levels at once on flat positions, tries a
guessed option first, moves a position one option up where that fits, searches
only the rows where one must move further and reuses its work arrays;
``pipeline/crawl/hullcrawl.py`` builds the LP durations computation-major, looks the
hull up once per run of equal durations along the events and once per moving
duration, and scores the crawl's plans from the fitter; ``pipeline/paretoset.py``
gathers flat and verifies the frontier in chunks. Each is checked here against the
plain computation it replaces.
"""

import numpy as np
import pytest

from energyopt.pipeline import paretoset, random_dag_instance, synthetic_instance
from energyopt.pipeline.crawl import clockfit, hullcrawl
from energyopt.pipeline.crawl.clockfit import ClockFitter, sum_in_order
from energyopt.pipeline.crawl.hullpath import hull_path, sample_times
from energyopt.pipeline.dag import CompactDag
from energyopt.pipeline.evaluator import evaluate_many
from energyopt.pipeline.paretoset import (
    BATCH_ROWS,
    batch_evaluate,
    frontier_points,
    pareto_indices,
)
from tests.pipeline.crawl import crawl_reference as ref

INSTANCES = [
    synthetic_instance(3, 4, 5, seed=1),
    random_dag_instance(15, 4, seed=3),
    random_dag_instance(24, 5, seed=7, edge_probability=0.15),
]


def _forward_fit(dag, times, pos, t, lf):
    """Per computation in topological order, the slowest option from its predecessors'
    finishes to ``lf``, never below ``pos``; returns the starts and finishes."""
    n, P = pos.shape
    es, fin = np.zeros((n, P)), np.zeros((n, P))
    for v in dag.order:
        es[v] = np.max([fin[p] for p in dag.preds[v]] + [np.zeros(P)], axis=0)
        room = (lf[v] - es[v]) * (1 + 1e-12)
        pos[v] = np.maximum(times[v].searchsorted(room, side="right") - 1, pos[v])
        t[v] = times[v][pos[v]]
        fin[v] = es[v] + t[v]
    return es, fin


def _backward_fit(dag, times, pos, t, es, T):
    """Per computation in reverse order, the slowest option from ``es`` to its
    successors' starts (and ``T``), never below ``pos``; returns the starts."""
    start = np.empty(pos.shape)
    for v in reversed(dag.order):
        late = np.min([start[s] for s in dag.succs[v]] + [T], axis=0)
        room = (late - es[v]) * (1 + 1e-12)
        pos[v] = np.maximum(times[v].searchsorted(room, side="right") - 1, pos[v])
        t[v] = times[v][pos[v]]
        start[v] = late - t[v]
    return start


def _plain_fit(fitter: ClockFitter, dag: CompactDag, d: np.ndarray, cap: np.ndarray):
    """The two clock passes computation by computation, in topological order."""
    n, P = d.shape
    times = [fitter.times[k] for k in fitter.table_of]
    fin = np.zeros((n, P))
    for v in dag.order:
        fin[v] = np.max([fin[p] for p in dag.preds[v]] + [np.zeros(P)], axis=0) + d[v]
    T = np.minimum(fin.max(axis=0), cap)
    lf, start = np.empty((n, P)), np.empty((n, P))
    for v in reversed(dag.order):
        lf[v] = np.min([start[s] for s in dag.succs[v]] + [T], axis=0)
        start[v] = lf[v] - d[v]
    pos, t = np.zeros((n, P), dtype=np.int64), np.zeros((n, P))
    es, _ = _forward_fit(dag, times, pos, t, lf)
    _backward_fit(dag, times, pos, t, es, T)
    return pos, t


def _durations(fitter: ClockFitter, P: int, seed: int) -> np.ndarray:
    """Random planned durations between each computation's fastest and slowest option."""
    rng = np.random.default_rng(seed)
    lo = np.asarray([fitter.times[k][0] for k in fitter.table_of])
    hi = np.asarray([fitter.times[k][-1] for k in fitter.table_of])
    d = lo[:, None] + rng.random((len(lo), P)) * (hi - lo)[:, None]
    # Some durations exactly at an option's time, where the rounding slack decides.
    exact = rng.random(d.shape) < 0.3
    d[exact] = np.broadcast_to(hi[:, None], d.shape)[exact]
    return d


@pytest.mark.parametrize("inst", INSTANCES)
def test_level_fit_matches_the_plain_passes(inst):
    dag = CompactDag(inst)
    fitter = ClockFitter(inst, dag)
    for P, seed in ((1, 0), (7, 1), (40, 2)):
        d = _durations(fitter, P, seed)
        span = np.zeros((dag.n, P))
        for v in dag.order:
            span[v] = np.max([span[p] for p in dag.preds[v]] + [np.zeros(P)], axis=0) + d[v]
        cap = np.where(np.arange(P) % 3 == 0, span.max(axis=0) * 0.97, np.inf)
        want_pos, want_t = _plain_fit(fitter, dag, d, cap)
        np.testing.assert_array_equal(ref.fit(fitter, d, cap), want_pos)
        fastest = np.zeros_like(want_pos) + fitter.row_offset  # flat positions
        pos, t = fitter.fit_rows(d[fitter.order], cap, guess=fastest)
        np.testing.assert_array_equal(ref.pareto(fitter, pos[fitter.rank[:-1]]), want_pos)
        np.testing.assert_array_equal(t[fitter.rank[:-1]], want_t)


def _level(fitter: ClockFitter, rng, P: int):
    """One level's arguments for the pick functions: times, offsets, rooms, positions."""
    rows = np.arange(min(fitter.n, 5))
    tv = [fitter.times[k] for k in fitter.row_table[rows]]
    off = fitter.row_offset[rows]
    top = np.asarray([t[-1] for t in tv])
    low = np.asarray([t[0] for t in tv])
    room = low[:, None] + rng.random((len(rows), P)) * (1.3 * top - low)[:, None]
    room[:, ::4] = top[:, None]  # exactly at the slowest option
    room[0, :] = -1.0  # below every option: the fastest is the fallback
    pos = np.asarray([rng.integers(0, len(t), P) for t in tv])
    # Windows that, with the rounding slack, end exactly at the next slower option.
    for j, t in enumerate(tv):
        nxt = pos[j, 1::4] + 1
        ok = nxt < len(t)
        room[j, 1::4][ok] = [_scaled_to(x) for x in t[nxt[ok]]]
    return tv, off, room, pos


def _scaled_to(x: float) -> float:
    """A room that the rounding slack ``1 + 1e-12`` turns into exactly ``x``."""
    r = x / (1 + 1e-12)
    for _ in range(8):
        if r * (1 + 1e-12) == x:
            return r
        r = np.nextafter(r, np.inf if r * (1 + 1e-12) < x else -np.inf)
    return r


def _plain_pick(tv, room, floor):
    p = np.asarray([t.searchsorted(r * (1 + 1e-12), side="right") for t, r in zip(tv, room)])
    pos = np.maximum(p - 1, floor)
    return pos, np.asarray([t[q] for t, q in zip(tv, pos)])


@pytest.mark.parametrize("inst", INSTANCES)
def test_guessed_and_floored_picks_match_the_plain_search(inst):
    fitter = ClockFitter(inst)
    rng = np.random.default_rng(5)
    tv, off, room, guess = _level(fitter, rng, 64)
    want_pos, want_t = _plain_pick(tv, room, 0)
    # One below where the window ends exactly at the option picked, right elsewhere.
    tie = np.zeros(room.shape, dtype=bool)
    tie[:, 1::4] = want_pos[:, 1::4] == guess[:, 1::4] + 1
    near = np.where(tie, want_pos - 1, want_pos)
    assert tie.any()
    for g in (guess, want_pos, near, np.zeros_like(guess)):  # wrong, right, near, fastest
        pos, t = g + off, np.empty(room.shape)  # flat positions
        clockfit._guessed_fitting(tv, fitter.flat_times, off, room.copy(), pos, t)
        np.testing.assert_array_equal(pos - off, want_pos)
        np.testing.assert_array_equal(t, want_t)
    floor = guess
    want_pos, want_t = _plain_pick(tv, room, floor)
    pos = floor + off
    t = np.asarray([x[q] for x, q in zip(tv, floor)])
    clockfit._slower_fitting(tv, fitter.flat_times, off, room.copy(), pos, t)
    np.testing.assert_array_equal(pos - off, want_pos)
    np.testing.assert_array_equal(t, want_t)
    assert np.any(want_pos != floor), "some position must move for this test to bite"


@pytest.mark.parametrize("inst", INSTANCES)
def test_picks_in_infinite_and_nan_windows(inst):
    fitter = ClockFitter(inst)
    rng = np.random.default_rng(9)
    tv, off, room, guess = _level(fitter, rng, 32)
    room[:, ::3] = np.inf  # the slowest option fits: never a padding entry
    last = np.repeat(np.asarray([len(x) - 1 for x in tv])[:, None], room.shape[1], axis=1)
    room[:, 1::3] = np.nan  # a guessed pick searches, as numpy sorts NaN last
    want_pos, want_t = _plain_pick(tv, room, 0)
    # Right but in the NaN windows: those alone tell whether NaN is searched.
    only_nan_wrong = np.where(np.isnan(room), 0, want_pos)
    assert np.any(only_nan_wrong != want_pos)
    for g in (guess, last, only_nan_wrong):
        pos, t = g + off, np.empty(room.shape)
        clockfit._guessed_fitting(tv, fitter.flat_times, off, room.copy(), pos, t)
        np.testing.assert_array_equal(pos - off, want_pos)
        np.testing.assert_array_equal(t, want_t)
    room[:, 1::3] = 1.0  # a floored pick keeps its option in a NaN window: not compared here
    for floor in (guess, last):
        want_pos, want_t = _plain_pick(tv, room, floor)
        pos, t = floor + off, np.asarray([x[q] for x, q in zip(tv, floor)])
        clockfit._slower_fitting(tv, fitter.flat_times, off, room.copy(), pos, t)
        np.testing.assert_array_equal(pos - off, want_pos)
        np.testing.assert_array_equal(t, want_t)


def test_sum_in_order_adds_row_after_row():
    rng = np.random.default_rng(0)
    x = rng.random((300, 5)) * 10.0 ** rng.integers(-3, 4, (300, 5))
    for cols in (1, 2, 5):
        want = x[0, :cols].copy()
        for row in x[1:, :cols]:
            want = want + row
        np.testing.assert_array_equal(sum_in_order(np.ascontiguousarray(x[:, :cols])), want)
    # numpy's own sum of a column is pairwise, and differs here: the helper would bite.
    assert np.ascontiguousarray(x[:, 0]).sum() != sum_in_order(x[:, :1])[0]


@pytest.mark.parametrize("inst", INSTANCES)
def test_crawl_scores_are_batch_evaluates_on_computation_major_plans(inst):
    """The crawl scored its plans stored by computation (a transposed array) before."""
    dag = CompactDag(inst)
    got = hullcrawl._crawl_samples(inst, hull_path(inst), 1e-3, dag=dag)
    T, E = batch_evaluate(inst, np.asfortranarray(got.plans), dag)
    np.testing.assert_array_equal(got.time_s, T)
    np.testing.assert_array_equal(got.energy_j, E)
    assert got.plans.flags.c_contiguous and got.plans.dtype == np.int64  # crawl_plans' own


@pytest.mark.parametrize("inst", INSTANCES)
def test_sixteen_bit_trace_plans_hold_the_same_indices(inst):
    trace = hullcrawl.exact_crawl(inst, tau_s=1e-3)
    assert trace.choices.dtype == hullcrawl.PLAN_DTYPE and trace.choices.flags.c_contiguous
    dag = CompactDag(inst)
    got = hullcrawl._crawl_samples(inst, hull_path(inst), 1e-3, dag=dag)
    np.testing.assert_array_equal(trace.choices[: len(got.plans)], got.plans)
    wide = trace.choices.astype(np.int64)
    np.testing.assert_array_equal(batch_evaluate(inst, trace.choices, dag)[1][len(got.plans) :],
                                  batch_evaluate(inst, wide, dag)[1][len(got.plans) :])  # fmt: skip
    a = frontier_points(inst, trace.choices, times_s=trace.time_s, energies_j=trace.energy_j)
    b = frontier_points(inst, wide, times_s=trace.time_s, energies_j=trace.energy_j)
    assert a == b and all(type(k) is int for p in a for k in p.solution.choice)


def test_a_last_plan_alone_in_its_chunk_is_scored_pairwise():
    inst = synthetic_instance(4, 8, 10, seed=2)
    dag = CompactDag(inst)
    fitter = ClockFitter(inst, dag)
    rng = np.random.default_rng(1)
    sizes = np.asarray([len(fitter.times[k]) for k in fitter.row_table])
    pos = (rng.random((fitter.n, BATCH_ROWS + 1)) * sizes[:, None]).astype(np.int64)
    pos += fitter.row_offset  # flat positions
    t = fitter._times_rows(pos).copy()
    plans = np.empty((BATCH_ROWS + 1, fitter.n), dtype=np.int64)
    fitter.option_rows(pos, plans)
    e_sum, t_sum = fitter.sums_in_order(pos, t)
    T = fitter.makespans_rows(t)
    E = e_sum + inst.p_blocking_w * (inst.num_stages * T - t_sum)
    got = hullcrawl._Samples(plans, T, T, T.copy(), E, fitter, np.ones(len(T), dtype=bool))
    hullcrawl._last_alone(inst, dag, got)
    want_T, want_E = batch_evaluate(inst, np.asfortranarray(plans), dag)
    np.testing.assert_array_equal(got.time_s, want_T)
    np.testing.assert_array_equal(got.energy_j, want_E)
    # Term after term and pairwise differ on these plans: the two rules are told apart.
    assert np.any(E != batch_evaluate(inst, plans, dag)[1])


@pytest.mark.parametrize("inst", INSTANCES)
@pytest.mark.parametrize("first", [0, 7, 30])
def test_lp_durations_seconds_and_cost_match_the_plain_formulas(inst, first):
    path = hull_path(inst)
    fitter = ClockFitter(inst)
    rows = hullcrawl._TableRows(path.hulls, fitter)
    k, T_q = sample_times(path, 2e-4)
    kk, tq = k[first : first + 50], T_q[first : first + 50]
    k0 = int(kk[0])
    d_k = hullcrawl._durations_at(path, k0, 0, path.d0, None)
    np.testing.assert_array_equal(d_k, path.d0 + path.delta[:k0] @ path.rate[:k0].astype(np.int64))
    starts = hullcrawl._event_starts(path, k0, int(kk[-1]) + 1, d_k)
    np.testing.assert_array_equal(starts, ref.event_durations(path, k0, int(kk[-1]) + 1, d_k).T)
    plain = (starts.T[kk - k0] + (path.L[kk] - tq)[:, None] * path.rate[kk].astype(np.int64)).T
    s, c, dq = hullcrawl._moving(path, starts, k0, kk - k0, path.L[kk] - tq)
    moves = plain != starts[:, kk - k0]
    assert moves.any(), "some duration should move within its event for this test to bite"
    np.testing.assert_array_equal(np.sort(c * len(kk) + s), np.flatnonzero(moves))
    np.testing.assert_array_equal(dq, plain[c, s])
    ds, cost, guess = hullcrawl._lp_rows(path, starts, kk, tq, rows)
    np.testing.assert_array_equal(ds, ref.exact_seconds(path, plain)[fitter.order])
    h = path.hulls
    want = np.zeros(len(kk))
    for kt, r in h.groups:
        want += np.interp(plain[r], h.q[kt], h.vc[kt]).sum(axis=0)
    np.testing.assert_array_equal(cost, want)
    # The guess: the slowest option within each duration (flat positions).
    seconds = ref.exact_seconds(path, plain)
    slowest = np.empty(plain.shape, dtype=np.int64)
    for kt, r in h.groups:
        fit = np.searchsorted(fitter.times[kt], seconds[r], side="right") - 1
        slowest[r] = np.maximum(fit, 0) + kt * fitter.width
    np.testing.assert_array_equal(guess, slowest[fitter.order])


@pytest.mark.parametrize("inst", INSTANCES)
def test_durations_at_a_later_event_from_the_last_chunk(inst):
    path = hull_path(inst)
    k1 = len(path.L)
    starts = hullcrawl._event_starts(path, 0, max(1, k1 // 2), path.d0)
    for k0 in range(k1):
        want = path.d0 + path.delta[:k0] @ path.rate[:k0].astype(np.int64)
        np.testing.assert_array_equal(hullcrawl._durations_at(path, k0, 0, path.d0, starts), want)


@pytest.mark.parametrize("inst", INSTANCES)
def test_rows_of_plans_and_positions_round_trip(inst):
    fitter = ClockFitter(inst)
    rng = np.random.default_rng(3)
    pos = ref.random_positions(fitter, rng, 11)
    plans = np.empty((11, fitter.n), dtype=np.int64)
    flat = ref.flat(fitter, pos)[fitter.order]
    fitter.option_rows(flat, plans)
    np.testing.assert_array_equal(plans, ref.options(fitter, pos).T)
    np.testing.assert_array_equal(fitter.positions_rows(plans), flat)
    np.testing.assert_array_equal(fitter._times_rows(flat), ref.times_of(fitter, pos)[fitter.order])


@pytest.mark.parametrize("inst", INSTANCES)
def test_relaxed_gap_plans_and_their_makespans(inst):
    dag = CompactDag(inst)
    fitter = ClockFitter(inst, dag)
    rng = np.random.default_rng(4)
    pos = ref.random_positions(fitter, rng, 30)
    plans = np.ascontiguousarray(ref.options(fitter, pos).T)
    T0, _ = batch_evaluate(inst, plans, dag)
    target = T0 * rng.uniform(1.0, 1.2, 30)
    out = np.empty_like(plans)
    spans = fitter.relax_options(plans, target, out)
    want = ref.relax(fitter, pos.copy(), target, passes=2)
    np.testing.assert_array_equal(out, ref.options(fitter, want).T)
    np.testing.assert_array_equal(spans, batch_evaluate(inst, out, dag)[0])
    assert np.any(out != plans), "the relaxation should move some clock for this test to bite"


def _plain_relax(fitter: ClockFitter, dag: CompactDag, pos: np.ndarray, T: np.ndarray):
    """A backward then a forward pass giving slack back, computation by computation."""
    n, P = pos.shape
    times = [fitter.times[k] for k in fitter.table_of]
    pos = pos.copy()
    t = np.asarray([times[v][pos[v]] for v in range(n)])
    es = ref.plain_starts(dag, t)
    start = _backward_fit(dag, times, pos, t, es, T)
    lf = np.empty((n, P))
    for v in reversed(dag.order):
        lf[v] = np.min([start[s] for s in dag.succs[v]] + [T], axis=0)
        start[v] = lf[v] - t[v]
    _, fin = _forward_fit(dag, times, pos, t, lf)
    return pos, fin.max(axis=0)


@pytest.mark.parametrize("inst", INSTANCES)
def test_relaxation_matches_the_plain_passes(inst):
    dag = CompactDag(inst)
    fitter = ClockFitter(inst, dag)
    rng = np.random.default_rng(8)
    pos = ref.random_positions(fitter, rng, 25)
    T = batch_evaluate(inst, np.ascontiguousarray(ref.options(fitter, pos).T), dag)[0]
    T = T * rng.uniform(1.0, 1.3, 25)
    want_pos, want_span = _plain_relax(fitter, dag, pos, T)
    got, _, span = fitter._relax(ref.flat(fitter, pos)[fitter.order], T, 2)
    np.testing.assert_array_equal(ref.pareto(fitter, got[fitter.rank[:-1]]), want_pos)
    np.testing.assert_array_equal(span, want_span)
    assert np.any(want_pos != pos), "the relaxation should move some clock for this test to bite"


@pytest.mark.parametrize("inst", INSTANCES)
def test_batch_evaluate_flat_gathers_and_known_makespans(inst):
    dag = CompactDag(inst)
    rng = np.random.default_rng(6)
    sizes = np.asarray([len(t) for t in inst.option_times])
    plans = (rng.random((40, inst.num_computations)) * sizes).astype(np.int64)
    T, E = batch_evaluate(inst, plans, dag)
    ev = evaluate_many(inst, plans, None)
    np.testing.assert_array_equal(T, ev.iteration_time_s)
    np.testing.assert_array_equal(E, ev.energy_j)
    T2, E2 = batch_evaluate(inst, plans, dag, makespans_s=T)
    np.testing.assert_array_equal(T2, T)
    np.testing.assert_array_equal(E2, E)


def test_frontier_verified_in_chunks_matches_one_evaluator_call():
    inst = synthetic_instance(2, 3, 4, seed=0)
    rng = np.random.default_rng(7)
    sizes = np.asarray([len(t) for t in inst.option_times])
    plans = (rng.random((2500, inst.num_computations)) * sizes).astype(np.int64)
    T, E = batch_evaluate(inst, plans, CompactDag(inst))
    keep = np.sort(rng.choice(2500, 2100, replace=False))  # more than one chunk
    ev = evaluate_many(inst, plans[keep], None)
    got_T, got_E = paretoset._verified(inst, plans, keep, T, E)
    np.testing.assert_array_equal(got_T[keep], ev.iteration_time_s)
    np.testing.assert_array_equal(got_E[keep], ev.energy_j)
    front = pareto_indices(T, E - inst.p_blocking_w * inst.num_stages * T)
    ev = evaluate_many(inst, plans[front], None)
    points = frontier_points(inst, plans, times_s=T, energies_j=E)
    assert [p.makespan_s for p in points] == ev.iteration_time_s.tolist()
    assert [p.objective for p in points] == ev.energy_j.tolist()
    assert [p.solution.choice for p in points] == [tuple(r) for r in plans[front].tolist()]


def test_positions_of_a_dominated_option_are_refused():
    inst = random_dag_instance(15, 4, seed=3)
    fitter = ClockFitter(inst)
    kt = next(k for k, inv in enumerate(fitter.inverse) if np.any(inv < 0))
    v = fitter.table_of.index(kt)
    plans = np.tile([int(ix[0]) for ix in (fitter.index[k] for k in fitter.table_of)], (3, 1))
    fitter.positions_rows(plans)  # Pareto options only: accepted
    plans[1, v] = int(np.flatnonzero(fitter.inverse[kt] < 0)[0])
    with pytest.raises(ValueError, match="not Pareto-optimal"):
        fitter.positions_rows(plans)
