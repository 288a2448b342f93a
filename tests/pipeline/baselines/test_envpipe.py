"""EnvPipe: planner (4.4) and scheduler (4.3) by hand, rankings, time limits, exact checks.

The GPT-3 test reads ``../shared/data/perseus-sosp24`` and skips when it is absent.
"""

from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import energyopt
from energyopt.core.errors import InstanceError
from energyopt.pipeline import (
    OptionTable,
    PemInstance,
    envpipe_schedule,
    evaluate,
    fastest_choice,
    instance_from_perseus_profile,
    nonmonotone_instance,
    random_dag_instance,
    synthetic_instance,
)
from energyopt.pipeline.baselines.envpipe import (
    critical_path,
    envpipe_plan,
    ladder,
    outer_envelope,
    structural_envelope,
    valley_option,
)
from energyopt.pipeline.baselines.envpipe_scheduler import envpipe_warmups, rescheduled
from energyopt.pipeline.dag import CompactDag
from energyopt.pipeline.exact.bruteforce import brute_force
from energyopt.pipeline.reference import published_cases
from energyopt.pipeline.schedules import Computation
from tests.timing import assert_within, measured

DATA = Path(__file__).resolve().parents[3] / ".." / "shared" / "data" / "perseus-sosp24"
PROFILE = DATA / "gpt3-175b+a100_sxm_bf16.csv"
ENVPIPE_FILE = DATA / "envpipe_result_gpt3-175b_a100_sxm.csv"


def side_branch_instance():
    """A (s0) -> E (s0) -> C (s0), A -> B (s1) -> C; S = 2, P_b = 10 W.

    A, B, C: (1.0 s, 10 J) at 1400 MHz or (1.5 s, 9 J) at 800 MHz.
    E: (0.5 s, 5 J) at 1400, (0.9 s, 3.5 J) at 1100, (1.2 s, 3 J) at 800 MHz.
    """
    big = OptionTable((1400, 800), (1.0, 1.5), (10.0, 9.0))
    tables = {
        "A": big,
        "B": big,
        "C": big,
        "E": OptionTable((1400, 1100, 800), (0.5, 0.9, 1.2), (5.0, 3.5, 3.0)),
    }
    comps = (
        Computation(0, "compute", 0, "A"),
        Computation(1, "compute", 0, "B"),
        Computation(0, "compute", 1, "C"),
        Computation(0, "compute", 2, "E"),
    )
    edges = ((0, 3), (3, 2), (0, 1), (1, 2))
    return PemInstance(2, comps, edges, tables, 10.0)


def test_envpipe_by_hand():
    inst = side_branch_instance()
    # All at 1400 MHz: A ends at 1, B at 2, E at 1.5; C starts at max(2, 1.5) = 2, T = 3 s.
    # Walk from C: same-GPU slack (E) 0.5 >= dependency delay (B) 0 -> B, then A.
    dag = CompactDag(inst)
    path, span = critical_path(inst, dag, [1.0, 1.0, 1.0, 0.5])
    assert path == [0, 1, 2] and span == pytest.approx(3.0)
    # Off the envelope, E goes to its valley (800 MHz, 1.2 s): E ends at 2.2, T = 3.2 s, and
    # the path is A, E, C. Balanced raises E one step (1100 MHz, 0.9 s): E ends at 1.9 <= 2,
    # T = 3 s again: done. Energy 10 + 10 + 10 + 3.5 = 33.5 J of compute, blocking
    # 10 W * (2 * 3 s - (1 + 1 + 1 + 0.9) s) = 21 J: 54.5 J.
    choice, stats = envpipe_plan(inst, "balanced")
    assert choice == (0, 0, 0, 1) and stats["iterations"] == 1
    res = energyopt.solve(inst, "envpipe")
    assert res.objective == pytest.approx(54.5)
    assert res.extra["iteration_time_s"] == pytest.approx(3.0)
    # Greedy puts E straight back at 1400 MHz: 35 J + 10 * (6 - 3.5) = 60 J (= all at max).
    res = energyopt.solve(inst, "envpipe-greedy")
    assert res.solution.choice == (0, 0, 0, 0)
    assert res.objective == pytest.approx(60.0)
    with pytest.raises(ValueError, match="policy"):
        envpipe_plan(inst, "lazy")
    with pytest.raises(ValueError, match="ranking"):
        envpipe_plan(inst, "balanced", "mhz")
    no_clocks = OptionTable((None, None), (1.0, 2.0), (2.0, 1.0))
    assert ladder(no_clocks, "time") == [1, 0]
    with pytest.raises(ValueError, match="without an SM clock"):
        ladder(no_clocks, "clock")
    assert ladder(OptionTable((None,), (1.0,), (1.0,)), "clock") == [0]  # a link


def faster_lower_clock_instance():
    """The side-branch DAG with E measured faster at 1100 MHz than at 1400 MHz.

    E: (0.6 s, 6 J) at 1400, (0.5 s, 5 J) at 1100, (1.2 s, 3 J) at 800 MHz; A, B, C
    as before. P_b = 10 W.
    """
    inst = side_branch_instance()
    tables = dict(inst.tables)
    tables["E"] = OptionTable((1400, 1100, 800), (0.6, 0.5, 1.2), (6.0, 5.0, 3.0))
    return PemInstance(2, inst.computations, inst.edges, tables, 10.0)


def test_rankings_on_a_faster_lower_clock():
    inst = faster_lower_clock_instance()
    e = inst.tables["E"]
    assert ladder(e, "time") == [2, 0, 1]  # 1.2 s, 0.6 s, 0.5 s: the top is 1100 MHz
    assert ladder(e, "clock") == [2, 1, 0]  # 800, 1100, 1400 MHz: the top is 1400 MHz
    # Both: envelope A, B, C at 1400 MHz (T = 3 s; E at either top ends by 1.6 <= 2).
    # E starts at its valley (800 MHz, 1.2 s) and ends at 2.2: T = 3.2 s, path A, E, C.
    # By time, balanced raises E one step, to 1400 MHz (0.6 s): E ends at 1.6, T = 3 s.
    # Energy 30 + 6 = 36 J, blocking 10 * (6 - 3.6) = 24 J: 60 J.
    res = energyopt.solve(inst, "envpipe", planner="improved")
    assert res.solution.choice == (0, 0, 0, 0) and res.objective == pytest.approx(60.0)
    # By MHz, one step up from 800 is 1100 MHz (0.5 s, 5 J): E ends at 1.5, T = 3 s.
    # Energy 30 + 5 = 35 J, blocking 10 * (6 - 3.5) = 25 J: 60 J as well; the plans differ.
    res = energyopt.solve(inst, "envpipe", planner="paper")
    assert res.solution.choice == (0, 0, 0, 1) and res.objective == pytest.approx(60.0)
    # Greedy sends E straight to the top: 1100 MHz by time, 1400 MHz by MHz.
    assert energyopt.solve(inst, "envpipe-greedy", planner="improved").solution.choice == (
        0,
        0,
        0,
        1,
    )
    res = energyopt.solve(inst, "envpipe-greedy", planner="paper")
    assert res.solution.choice == (0, 0, 0, 0)


def test_clock_ranking_keeps_a_slower_maximum_clock():
    # A, B and C measured slower at 1400 MHz (1.2 s, 11 J) than at 800 MHz (1.0 s, 9 J).
    slow_top = OptionTable((1400, 800), (1.2, 1.0), (11.0, 9.0))
    base = side_branch_instance()
    tables = {**base.tables, "A": slow_top, "B": slow_top, "C": slow_top}
    inst = PemInstance(2, base.computations, base.edges, tables, 10.0)
    # By time the top is 800 MHz: envelope A, B, C at 1.0 s, T = 3 s; E (valley 1.2 s) ends
    # at 2.2 > 2, balanced raises it to 1100 MHz (0.9 s), ends at 1.9: 9 * 3 + 3.5 = 30.5 J
    # + 10 * (6 - 3.9) = 21 J: 51.5 J at 3 s.
    res = energyopt.solve(inst, "envpipe", planner="improved")
    assert res.objective == pytest.approx(51.5) and res.extra["iteration_time_s"] == 3.0
    # By MHz the envelope runs 1400 MHz: T = 3.6 s; E at its valley ends at 1.2 + 1.2 = 2.4
    # = B's end: T stays 3.6 s. 33 + 3 = 36 J + 10 * (7.2 - 4.8) = 24 J: 60 J at 3.6 s.
    res = energyopt.solve(inst, "envpipe", planner="paper")
    assert res.objective == pytest.approx(60.0)
    assert res.extra["iteration_time_s"] == pytest.approx(3.6)


def test_lowtime_valley_by_hand():
    # E: (0.5 s, 5 J) at 1400, (0.9004 s, 3.1 J) at 900, (0.9008 s, 3.0 J) at 800 MHz; none
    # dominates another. Floored to 1 ms both slow options are 900 ms, the slowest unit;
    # the authors' script starts in it at the dearer option, 900 MHz.
    e = OptionTable((1400, 900, 800), (0.5, 0.9004, 0.9008), (5.0, 3.1, 3.0))
    assert valley_option(e, "energy") == 2 and valley_option(e, "lowtime") == 1
    with pytest.raises(ValueError, match="valley"):
        valley_option(e, "deepest")
    base = side_branch_instance()
    inst = PemInstance(2, base.computations, base.edges, {**base.tables, "E": e}, 10.0)
    # Either start fits: E ends by 1.9008 <= 2 (B's end), T = 3 s, no reconfiguration.
    # 800 MHz: 30 + 3.0 = 33 J + 10 * (6 - 3.9008) = 20.992 J: 53.992 J.
    # 900 MHz: 30 + 3.1 = 33.1 J + 10 * (6 - 3.9004) = 20.996 J: 54.096 J.
    assert energyopt.solve(inst, "envpipe").objective == pytest.approx(53.992)
    res = energyopt.solve(inst, "envpipe", valley="lowtime")
    assert res.objective == pytest.approx(54.096) and res.solution.choice == (0, 0, 0, 1)


def tiny_1f1b():
    """S = 2, M = 3, P_b = 1 W; every computation (1 s, 10 J) at 1400 MHz, and the
    stage-0 forward also (2 s, 6 J) at 800 MHz."""
    one = OptionTable((1400,), (1.0,), (10.0,))
    tables = {
        "s0/forward": OptionTable((1400, 800), (1.0, 2.0), (10.0, 6.0)),
        "s0/backward": one,
        "s1/forward": one,
        "s1/backward": one,
    }
    return PemInstance.from_schedule("1f1b", 2, 3, tables, 1.0)


def test_scheduler_by_hand():
    inst = tiny_1f1b()
    # 1F1B: stage 0 runs F0 F1 B0 F2 B1 B2 (one warm-up forward), stage 1 F0 B0 F1 B1 F2 B2.
    # At 1400 MHz: s0F0 [0,1], s0F1 [1,2], s1F0 [1,2], s1B0 [2,3], s0B0 [3,4], s1F1 [3,4],
    # s0F2 [4,5], s1B1 [4,5], s1F2 [5,6], s0B1 [5,6], s1B2 [6,7], s0B2 [7,8]: T = 8 s.
    # The envelope walk passes s0F2 (s1F2 waits on it as long as on s1B1), so only s0F1
    # goes to 800 MHz: [1,3], still in time for s1F1 and s0B0 at 3. Energy
    # 11 * 10 + 6 = 116 J, blocking 1 W * (2 * 8 - 13) s = 3 J: 119 J.
    res = energyopt.solve(inst, "envpipe", planner="improved")
    assert res.objective == pytest.approx(119.0) and res.extra["iteration_time_s"] == 8.0
    assert brute_force(inst, 8.0)[1] == pytest.approx(119.0)  # s0F0 or s0F2 slow: T = 9 s
    # One more warm-up forward on stage 0 (F0 F1 F2 B0 B1 B2): s0F2 [2,3] and s1F2 waits on
    # s1B1 (ends 5) anyway: T = 8 s, no slowdown. Now the envelope runs along stage 1, and
    # s0F1, s0F2 at 800 MHz end at 3 and 5; s0B0 [5,6], s0B1 [6,7], s0B2 [7,8] (after s1B2
    # at 7): T = 8 s. Energy 10 * 10 + 2 * 6 = 112 J, blocking 16 - 14 = 2 J: 114 J.
    warm, stats = envpipe_warmups(inst, planner="improved")
    assert warm == [2, 0] and stats["moves"] == 1
    assert stats["1f1b_energy_j"] == pytest.approx(119.0)
    sched = envpipe_schedule(inst, planner="improved")
    assert sched.computations == inst.computations and sched.schedule == "explicit"
    res = energyopt.solve(sched, "envpipe", planner="improved")
    assert res.objective == pytest.approx(114.0) and res.extra["iteration_time_s"] == 8.0
    assert brute_force(sched, 8.0)[1] == pytest.approx(114.0)
    # Stage 0 with two warm-up forwards holds 3 activations: a cap of 2 keeps 1F1B.
    assert envpipe_warmups(inst, planner="improved", max_inflight=2)[0] == [1, 0]


def test_scheduler_input_errors():
    inst = tiny_1f1b()
    for bad in (0, True, 2.5):
        with pytest.raises(InstanceError, match="max_inflight"):
            envpipe_warmups(inst, max_inflight=bad)
    with pytest.raises(ValueError, match="one count per stage"):
        rescheduled(inst, [1])
    with pytest.raises(InstanceError, match=r"warmups\[0\]"):
        rescheduled(inst, [4, 0])  # more warm-up forwards than microbatches (3)
    gpipe = PemInstance.from_schedule("gpipe", 2, 3, dict(inst.tables), 1.0)
    with pytest.raises(ValueError, match="starts from 1f1b"):
        envpipe_schedule(gpipe)


def test_rescheduled_1f1b_is_1f1b():
    inst = synthetic_instance(3, 5, 3, seed=2)
    same = rescheduled(inst, [2, 1, 0])  # 1F1B's own warm-ups: min(S - s - 1, M)
    assert set(same.edges) == set(inst.edges)


@pytest.mark.parametrize("ranking", ["time", "clock"])
@pytest.mark.parametrize("policy", ["balanced", "greedy"])
def test_envpipe_keeps_the_baseline_iteration_time(policy, ranking):
    inst = nonmonotone_instance(4, 8, 12, seed=5)
    choice, stats = envpipe_plan(inst, policy, ranking)
    ev = evaluate(inst, choice, None)
    assert ev.iteration_time_s <= stats["baseline_time_s"] * (1 + 1e-12)
    fastest = evaluate(inst, fastest_choice(inst), None)
    if ranking == "time":  # the baseline is every computation at its fastest option
        assert stats["baseline_time_s"] == pytest.approx(fastest.iteration_time_s, rel=1e-12)
        assert ev.energy_j <= fastest.energy_j
    else:  # at its maximum clock, which is slower on these tables
        assert stats["baseline_time_s"] >= fastest.iteration_time_s


def _never_below(inst, method, ranking, valley="energy"):
    res = energyopt.solve(inst.with_deadline(None), method, ranking=ranking, valley=valley)
    T = res.extra["iteration_time_s"]
    _, exact = brute_force(inst, T)
    assert res.objective >= exact * (1 - 1e-9)
    return res


@pytest.mark.parametrize("seed", range(6))
def test_envpipe_never_below_exact(seed):
    inst = random_dag_instance(7, 3, seed=seed, deadline_fraction=None)
    for method in ("envpipe", "envpipe-greedy"):
        for ranking in ("time", "clock"):
            _never_below(inst, method, ranking)


@pytest.mark.parametrize("seed", range(4))
def test_scheduled_envpipe_never_below_exact(seed):
    # 12 computations with 2 clocks each (4,096 plans): brute force on the very DAG
    # EnvPipe planned on, the rescheduled one; simulated non-monotone tables.
    inst = nonmonotone_instance(2, 3, 2, seed=seed, throttle=0.0, time_noise=0.02)
    for ranking in ("time", "clock"):
        sched = envpipe_schedule(inst, ranking=ranking)
        res = _never_below(sched, "envpipe", ranking)
        plain = energyopt.solve(inst, "envpipe", ranking=ranking)
        # The scheduler only takes moves that lower EnvPipe's energy without slowing down.
        assert res.objective <= plain.objective * (1 + 1e-12)
        assert res.extra["iteration_time_s"] <= plain.extra["iteration_time_s"] * (1 + 1e-12)


def test_scheduled_envpipe_not_below_highs():
    inst = nonmonotone_instance(3, 5, 4, seed=3)
    sched = envpipe_schedule(inst)
    res = energyopt.solve(sched, "envpipe")
    exact = energyopt.solve(sched.with_deadline(res.extra["iteration_time_s"]), "highs")
    assert exact.status.value == "optimal"
    assert res.objective >= exact.objective * (1 - 1e-6)


def test_time_limits_keep_the_baseline():
    inst = nonmonotone_instance(4, 8, 12, seed=1)
    full = energyopt.solve(inst, "envpipe")
    assert full.extra["iterations"] > 0 and full.termination.value == "completed"
    with measured() as used:
        cut = energyopt.solve(inst, "envpipe", time_limit=1e-9)
    assert_within(used, 1e-9, "envpipe")
    # Stopped before the first reconfiguration, then whole critical paths went back to
    # their fastest options: the incumbent keeps the baseline time.
    assert cut.termination.value == "time_limit" and cut.has_solution
    assert cut.extra["iteration_time_s"] <= full.extra["baseline_time_s"] * (1 + 1e-12)
    warm, stats = envpipe_warmups(inst, time_limit=1e-9)
    assert warm == [3, 2, 1, 0] and stats["stopped"]  # 1F1B's, the always-valid answer


def test_envpipe_reports_infeasible_deadline():
    inst = side_branch_instance().with_deadline(2.5)  # faster than all-max (3 s)
    res = energyopt.solve(inst, "envpipe")
    assert not res.has_solution and res.termination.value == "infeasible"


def test_structural_envelope_and_greedy_steps_by_hand():
    # tiny_1f1b (S = 2, M = 3): stage 1's six units, stage 0's F0 and B2.
    inst = tiny_1f1b()
    names = {inst.computations[i].name for i in structural_envelope(inst)}
    assert names == {f"{k}[1,{m}]" for k in "FB" for m in range(3)} | {"F[0,0]", "B[0,2]"}
    assert structural_envelope(side_branch_instance()) is None  # no forward/backward
    # Side-branch DAG with E on five clocks (1400, 1300, 1200, 1100, 800 MHz: 0.5, 0.6,
    # 0.7, 0.8, 1.2 s; 5, 4.5, 4, 3.5, 3 J). E starts at 800 MHz, ends at 2.2 > 2 (B's
    # end): T = 3.2 s, path A, E, C.
    base = side_branch_instance()
    e = OptionTable(
        (1400, 1300, 1200, 1100, 800), (0.5, 0.6, 0.7, 0.8, 1.2), (5.0, 4.5, 4.0, 3.5, 3.0)
    )
    inst = PemInstance(2, base.computations, base.edges, {**base.tables, "E": e}, 10.0)
    # The authors' greedy raises E three steps, to 1300 MHz (0.6 s): ends at 1.6, T = 3 s.
    # 30 + 4.5 J of compute, blocking 10 * (6 - 3.6) = 24 J: 58.5 J.
    res = energyopt.solve(inst, "envpipe-greedy")
    assert res.solution.choice == (0, 0, 0, 1) and res.objective == pytest.approx(58.5)
    # As printed, greedy sends E to the maximum: 35 J + 10 * (6 - 3.5) = 60 J.
    assert energyopt.solve(inst, "envpipe-greedy", planner="paper").objective == pytest.approx(60)
    # Balanced raises one step, to 1100 MHz (0.8 s), ends at 1.8: 33.5 + 22 = 55.5 J.
    assert energyopt.solve(inst, "envpipe").objective == pytest.approx(55.5)
    with pytest.raises(ValueError, match="planner"):
        envpipe_plan(inst, planner="mine")


#: Every published case with an EnvPipe result file (any model and GPU, by file names).
AUTHORS_CASES = [c for c in published_cases(DATA) if c.envpipe is not None]


@pytest.mark.skipif(not AUTHORS_CASES, reason="../shared/data/perseus-sosp24 absent")
@pytest.mark.parametrize(
    "case", AUTHORS_CASES, ids=lambda c: f"{c.model}-{c.gpu}-{c.num_microbatches}"
)
def test_envpipe_reproduces_the_authors_files(case):
    # The Perseus authors' EnvPipe results (8 stages, 1F1B). On A100 their columns are
    # 10 x T (rounded to 1e-3) and 80 x E at every microbatch count of both models; the
    # default planner, EnvPipe's own code, reproduces them: measured |dE| < 1e-7 relative
    # (the issue asks for 0.1 %). On Bloom, whose every table runs faster at 1395 MHz than
    # at 1410 MHz, the paper's planner ends 2.4-3.0 % below the file.
    ref = pd.read_csv(case.envpipe).set_index("num_microbatches")
    M = case.num_microbatches
    if M not in ref.index:
        pytest.skip(f"{case.envpipe.name} has no row for {M} microbatches")
    inst = instance_from_perseus_profile(case.profile, M, gpu=case.gpu)
    res = energyopt.solve(inst, "envpipe")
    assert round(10 * res.extra["iteration_time_s"], 3) == pytest.approx(
        ref.loc[M, "iteration_time"], abs=1.5e-3
    )
    assert 80 * res.objective == pytest.approx(ref.loc[M, "energy"], rel=1e-3)
    if case.model == "bloom" and case.gpu == "a100_sxm" and M == 12:
        assert 80 * res.objective == pytest.approx(ref.loc[M, "energy"], rel=1e-6)
        paper = energyopt.solve(inst, "envpipe", planner="paper")
        assert 80 * paper.objective < 0.98 * ref.loc[M, "energy"]


@pytest.mark.skipif(not ENVPIPE_FILE.exists(), reason="../shared/data/perseus-sosp24 absent")
def test_the_authors_file_is_not_the_scheduled_variant():
    # With EnvPipe's scheduler (4.3) the same planner saves more at the same time, so
    # the file is not from the scheduled variant (docs/pipeline.md, EnvPipe).
    inst = instance_from_perseus_profile(PROFILE, 12, p_blocking_w=83.64)
    # On GPT-3 the Algorithm 2 walk finds the authors' structural envelope.
    assert set(outer_envelope(inst)) == structural_envelope(inst)
    plain = energyopt.solve(inst, "envpipe")
    sched = energyopt.solve(envpipe_schedule(inst), "envpipe")
    assert sched.extra["iteration_time_s"] == pytest.approx(plain.extra["iteration_time_s"])
    assert sched.objective < 0.99 * plain.objective


@st.composite
def small_1f1b(draw):
    """1F1B with 2-3 stages, 2-3 microbatches (at most 12 computations) and 1-2 options
    per table, times and energies drawn independently of the clocks (non-monotone)."""
    S, M = draw(st.sampled_from([(2, 2), (2, 3), (3, 2)]))
    tables = {}
    for s in range(S):
        for kind in ("forward", "backward"):
            k = draw(st.integers(1, 2))
            times = tuple(draw(st.floats(0.1, 3.0)) for _ in range(k))
            energies = tuple(draw(st.floats(0.0, 50.0)) for _ in range(k))
            tables[f"s{s}/{kind}"] = OptionTable((1400, 1100)[:k], times, energies)
    return PemInstance.from_schedule("1f1b", S, M, tables, draw(st.floats(0.0, 20.0)))


@given(
    small_1f1b(),
    st.sampled_from(["balanced", "greedy"]),
    st.sampled_from(["time", "clock"]),
    st.sampled_from(["energy", "lowtime"]),
)
def test_envpipe_and_scheduler_properties(inst, policy, ranking, valley):
    method = "envpipe" if policy == "balanced" else "envpipe-greedy"
    plain = _never_below(inst, method, ranking, valley)
    # No slowdown: the plan runs exactly as fast as every computation at its top option.
    assert plain.extra["iteration_time_s"] <= plain.extra["baseline_time_s"] * (1 + 1e-12)
    if ranking == "time":
        fastest = evaluate(inst, fastest_choice(inst), None).iteration_time_s
        assert plain.extra["baseline_time_s"] == pytest.approx(fastest, rel=1e-12)
    warm, stats = envpipe_warmups(inst, policy=policy, ranking=ranking, valley=valley)
    sched = _never_below(rescheduled(inst, warm), method, ranking, valley)
    assert sched.objective == pytest.approx(stats["energy_j"], rel=1e-12)
    assert sched.objective <= plain.objective * (1 + 1e-12)
    assert sched.extra["iteration_time_s"] <= plain.extra["iteration_time_s"] * (1 + 1e-12)
