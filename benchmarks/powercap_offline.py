"""Offline time-indexed MILP bound against online policies on small simulated traces.

Usage::

    .venv/bin/python benchmarks/powercap_offline.py [--jobs 5] [--slot 120] [--seeds 0 1 2]

For each seed and eta: simulate PowerFlow (greedy) and the per-event MILP policy with
the simulated GPU as both truth and prediction, then solve the offline bound; the
bound is below every cap-respecting policy on that trace.
"""

from __future__ import annotations

import argparse

import pandas as pd

from energyopt.core.gap import gap
from energyopt.powercap.instance import p_max_from_models
from energyopt.powercap.offline import offline_bound
from energyopt.powercap.policies import PowerFlowPolicy
from energyopt.powercap.profilegen import CLOCKS_MHZ, IDLE_POWER_W, WORKLOADS, truth_models
from energyopt.powercap.simulator import Cluster, simulate
from energyopt.powercap.trace import synthetic_trace


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=5)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--slot", type=float, default=120.0)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--etas", type=float, nargs="+", default=[0.4, 0.7, 1.0])
    ap.add_argument("--time-limit", type=float, default=60.0)
    args = ap.parse_args()
    tm = truth_models(4)
    pmax = p_max_from_models(tm, CLOCKS_MHZ, {w: WORKLOADS[w].batch_sizes for w in WORKLOADS})
    cl = Cluster(args.gpus, 4, CLOCKS_MHZ, IDLE_POWER_W, pmax)
    rows = []
    for seed in args.seeds:
        tr = synthetic_trace(
            args.jobs, span_s=1200, models=tm, seed=seed, max_gpus=4, median_duration_s=900
        )
        for eta in args.etas:
            g = simulate(tr, PowerFlowPolicy(tm, eta), cl, tm)
            m = simulate(tr, PowerFlowPolicy(tm, eta, method="highs"), cl, tm)
            horizon = max(g.makespan_s, m.makespan_s) + 2 * args.slot
            ob = offline_bound(
                tr, cl, tm, eta, slot_s=args.slot, horizon_s=horizon, time_limit=args.time_limit
            )
            rows.append(
                {
                    "seed": seed,
                    "eta": eta,
                    "greedy_jct_s": g.mean_jct_s,
                    "event_milp_jct_s": m.mean_jct_s,
                    "offline_bound_s": ob.bound,
                    "bound_status": ob.termination.value,
                    "gap_greedy": gap(g.mean_jct_s, ob.bound),
                    "gap_event_milp": gap(m.mean_jct_s, ob.bound),
                    "slots": ob.num_slots,
                    "bound_s": ob.runtime_s,
                }
            )
    print(
        f"cluster {args.gpus} GPUs (nodes of 4), {args.jobs} jobs per synthetic trace, "
        f"slot {args.slot:g} s; simulated GPU as truth and prediction"
    )
    print(pd.DataFrame(rows).to_string(index=False, float_format=lambda v: f"{v:.4g}"))


if __name__ == "__main__":
    main()
