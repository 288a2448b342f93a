"""Against the Perseus authors' frontier files, in their units; Table 6 by their convention.

Every case of ``../shared/data/perseus-sosp24`` found by the artifact's file names
(any model, GPU, microbatch count and time unit) is checked; skips when absent.
The file reader and the unit are also checked on written files.
"""

from pathlib import Path

import numpy as np
import pytest

from energyopt.core.errors import InstanceError
from energyopt.pipeline import instance_from_perseus_profile
from energyopt.pipeline.evaluator import fastest_choice, uniform_clock_choice
from energyopt.pipeline.reference import (
    compare_with_frontier,
    crawl_on_their_input,
    energy_at_horizon,
    floored_instance,
    planned_frontier,
    published_cases,
    read_perseus_frontier,
)

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "perseus-sosp24"
CASES = published_cases(DATA)
#: Perseus Table 6 (%), the A100 rows.
TABLE6 = {
    ("gpt3-175b", "a100_sxm"): {12: 15.20, 24: 14.19, 48: 13.62, 96: 13.32},
    ("bloom", "a100_sxm"): {12: 10.47, 24: 7.06, 48: 5.23, 96: 4.28},
}


def _id(case):
    return f"{case.model}-{case.gpu}-{case.num_microbatches}"


def _params():
    marks = {True: [pytest.mark.slow], False: []}
    out = []
    for c in CASES:
        m = list(marks[c.num_microbatches >= 48])
        out.append(pytest.param(c, marks=m, id=_id(c)))
    return out or [pytest.param(None, marks=pytest.mark.skip(reason="no published data"))]


@pytest.mark.parametrize("case", _params())
def test_frontier_at_or_below_theirs_in_their_units(case):
    inst = instance_from_perseus_profile(case.profile, case.num_microbatches, gpu=case.gpu)
    ref = read_perseus_frontier(case.frontier)
    # Their fastest time is the makespan of every computation at its fastest option with
    # durations floored to the file's unit, as lowtime plans: the whole offset to our
    # fastest measured time (docs/pipeline.md, "Against the authors' frontiers").
    t0, _ = planned_frontier(inst, np.array([fastest_choice(inst).choice]), ref.unit_s)
    assert t0[0] == ref.units.min()
    # The default crawl given lowtime's input (floored times, tau = the unit), scored as
    # the file scores its own plans.
    plans = crawl_on_their_input(inst, ref)
    comp = compare_with_frontier(inst, plans, ref)
    assert comp.our_fastest_units == ref.units.min()
    # Table 6, authors' convention: baseline blocking up to the fastest time only. Their
    # own file reproduces the paper to 0.01 points; ours saves at least as much.
    paper = TABLE6.get((case.model, case.gpu), {}).get(case.num_microbatches)
    base = uniform_clock_choice(inst, 1410).choice if paper is not None else None
    if paper is not None:
        k = int(np.argmin(ref.time_s))
        theirs = 1 - ref.energy_j[k] / energy_at_horizon(inst, base, float(ref.time_s[k]))
        assert 100 * theirs == pytest.approx(paper, abs=0.006)
        assert (
            100 * (1 - comp.ours[k] / energy_at_horizon(inst, base, float(ref.time_s[k]))) >= paper
        )
    assert comp.excess.max() <= 0.0, f"max excess {comp.excess.max():+.4%}"


def test_read_frontier_unit_and_errors(tmp_path):
    f = tmp_path / "frontier_m_g_mb2.csv"
    f.write_text("time,energy\n1.2345,10.0\n1.2346,9.5\n1.2349,9.0\n")
    ref = read_perseus_frontier(f)
    assert ref.unit_s == 1e-4 and list(ref.units) == [12345, 12346, 12349]
    f.write_text("time,energy\n1.2345,10.0\n1.23455,9.5\n1.2347,9.0\n")  # 0.05 ms: not 0.15 ms
    assert read_perseus_frontier(f).unit_s == 5e-5
    for body, match in (
        ("time,energy\n1.0,1.0\n1.0,2.0\n", "one distinct value"),
        ("time,energy\n1.0,1.0\n1.002,2.0\n1.003,true\n", "line 4: energy"),
        ("time,energy\n1.0,1.0\n1.002,-2.0\n", "line 3: energy"),
        ("time\n1.0\n", "energy"),
    ):
        f.write_text(body)
        with pytest.raises(InstanceError, match=match):
            read_perseus_frontier(f)


def test_planned_frontier_by_hand():
    # Two stages, one microbatch: F0 -> F1 -> B1 -> B0, P_b = 10 W. Options (s, J):
    # every table (0.0104, 1.0) and (0.0207, 0.6). Floored to 1 ms: 10 and 20 units.
    from energyopt.pipeline import OptionTable, PemInstance

    tab = OptionTable((1400, 800), (0.0104, 0.0207), (1.0, 0.6))
    tables = {f"s{s}/{k}": tab for s in (0, 1) for k in ("forward", "backward")}
    inst = PemInstance.from_schedule("1f1b", 2, 1, tables, 10.0)
    units, energy = planned_frontier(inst, np.array([[0, 0, 0, 0], [1, 0, 0, 0]]), 1e-3)
    # All fast: planned 4 x 10 = 40 units (measured 41.6 ms); energy 4 J + blocking
    # 10 W x (2 x 0.040 - 0.040) s = 0.4 J: 4.4 J. One slow: 50 units, 3.6 J +
    # 10 x (0.100 - 0.050) = 0.5 J: 4.1 J.
    assert list(units) == [40, 50]
    assert energy == pytest.approx([4.4, 4.1])
    f = floored_instance(inst, 1e-3)
    assert f.tables["s0/forward"].time_s == pytest.approx((0.010, 0.020))
