"""Both forms of Algorithm 1 against the exact event MILP on events from simulated runs.

``greedy`` is energyopt's (doubling steps, zero-gain stops, default); ``greedy-printed``
is Algorithm 1 as printed (formulations/powercap.md, PC-16).

Usage::

    .venv/bin/python benchmarks/powercap_gap.py [--events 40] [--time-limit 30] [--seed 0]

Runs PowerFlow over the default simulated setup at several eta, records every
scheduling event, draws ``--events`` of them and solves each with both greedies and
the MILP (HiGHS, proven bound); prints the gap table and its summary, then the
``paper`` suite.
"""

from __future__ import annotations

import argparse
import time

import pandas as pd

import energyopt
from energyopt.core.gap import gap
from energyopt.powercap.experiments import default_setup, event_gap_table, sample_events
from energyopt.powercap.policies import PowerFlowPolicy
from energyopt.powercap.simulator import simulate
from energyopt.powercap.suites import suite


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=40)
    ap.add_argument("--time-limit", type=float, default=30.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--etas", type=float, nargs="+", default=[0.4, 0.6, 0.8, 1.0])
    ap.add_argument(
        "--milp-policy-etas",
        type=float,
        nargs="*",
        default=[],
        help="also simulate the whole trace with the event MILP as the policy at these eta",
    )
    args = ap.parse_args()
    pd.set_option("display.width", 200)
    setup = default_setup(seed=args.seed)
    print("SETUP:", setup.describe())
    events = []
    for eta in args.etas:
        pol = PowerFlowPolicy(setup.predicted, eta, record=True)
        simulate(setup.trace, pol, setup.cluster, setup.truth, reschedule_interval_s=600)
        events.extend(pol.events)
    picked = sample_events(events, args.events, min_jobs=2, seed=args.seed)
    print(f"\n{len(events)} events recorded; {len(picked)} drawn at random (>= 2 jobs)")
    tick = time.perf_counter()
    t = event_gap_table(picked, time_limit=args.time_limit)
    print(t.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    opt = t[t["milp_termination"] == "optimal"]
    print(f"\nsummary: {len(opt)}/{len(t)} MILP optimal; {time.perf_counter() - tick:.0f} s")
    for label, col in (("greedy", "gap_greedy"), ("greedy-printed", "gap_printed")):
        g = opt[col].dropna()
        print(
            f"  {label:15s} gap mean {g.mean():.4f}, median {g.median():.4f}, "
            f"max {g.max():.4f}, min {g.min():.4f}; = optimum on "
            f"{int((g <= 1e-9).sum())}/{len(opt)} events"
        )
    print("\npaper suite (generated events, simulated tables)")
    rows = []
    for inst in suite("paper"):
        g = energyopt.solve(inst, "greedy")
        gp = energyopt.solve(inst, "greedy-printed")
        h = energyopt.solve(inst, "highs", time_limit=args.time_limit)
        rows.append(
            {
                "instance": inst.name,
                "greedy_jct_s": g.objective,
                "printed_jct_s": gp.objective,
                "milp_jct_s": h.objective,
                "bound_s": h.bound,
                "termination": h.termination.value,
                "gap_greedy": gap(g.objective, h.bound),
                "gap_printed": gap(gp.objective, h.bound),
                "greedy_s": g.runtime_s,
                "milp_s": h.runtime_s,
            }
        )
    print(pd.DataFrame(rows).to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    if args.milp_policy_etas:
        print("\nwhole-trace simulation: greedy policies vs event-MILP policy")
        rows = []
        for eta in args.milp_policy_etas:
            for method in ("greedy", "greedy-printed", "highs"):
                pol = PowerFlowPolicy(
                    setup.predicted, eta, method=method, time_limit=args.time_limit
                )
                r = simulate(
                    setup.trace, pol, setup.cluster, setup.truth, reschedule_interval_s=600
                )
                rows.append(
                    {
                        "eta": eta,
                        "policy": pol.name,
                        "mean_jct_s": r.mean_jct_s,
                        "energy_j": r.total_energy_j,
                        "decisions": r.num_decisions,
                    }
                )
        print(pd.DataFrame(rows).to_string(index=False, float_format=lambda v: f"{v:.6g}"))


if __name__ == "__main__":
    main()
