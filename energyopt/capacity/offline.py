"""Offline lower bound on the cumulative cost of a simulated run (issue 25, item 4).

Relaxation over the whole horizon (formulations/capacity.md, CAP-B1..CAP-B3): every job
alone on the cluster, with the nodes' idle power and the other jobs dropped. A job j
that trains ``x_c`` of its ``E_j`` epochs in configuration c (GPU type and count) draws
at least ``x_c tau_c g_c p_c`` joules of GPU power (CAP-B1: the idle part of a node is
shared and dropped; a restart from a checkpoint only adds epochs), and cannot end
before ``a_j + sum_c x_c tau_c`` (CAP-B2: one configuration at a time). So its cost is
at least the optimum of the linear program

    min  price * sum_c x_c tau_c g_c p_c + w_j s_j
    s.t. s_j >= a_j + sum_c x_c tau_c - d_j,  s_j >= 0,  sum_c x_c = E_j,  x >= 0

(CAP-B3), whose optimum has at most two configurations: it is found by trying each
configuration alone and each pair that ends exactly at the due time. Summed over the
jobs this bounds every policy on the trace, whatever it knows in advance.
"""

from __future__ import annotations

import itertools

from energyopt.capacity.generators import SubmittedJob
from energyopt.capacity.scenario import CapacityScenario


def job_configurations(sc: CapacityScenario, job: SubmittedJob) -> list[tuple[float, float]]:
    """(seconds, EUR of GPU energy) of the whole job in each configuration it can use."""
    out = []
    for gpu_type, g_max, p_gpu in {(n.gpu_type, n.num_gpus, n.gpu_power_w) for n in sc.nodes}:
        row = job.epoch_time_s.get(gpu_type, ())
        for g in range(1, min(g_max, len(row)) + 1):
            t = job.epochs * row[g - 1]
            out.append((t, sc.price_per_joule * t * g * p_gpu))
    return out


def job_bound(sc: CapacityScenario, job: SubmittedJob) -> float:
    """CAP-B3's optimum for one job: vertices and due-time crossings of pairs."""
    configs = job_configurations(sc, job)
    slack = job.due_s - job.arrival_s
    w = job.tardiness_weight_eur_per_s
    best = min(e + w * max(0.0, t - slack) for t, e in configs)
    for (t1, e1), (t2, e2) in itertools.combinations(configs, 2):
        if (t1 - slack) * (t2 - slack) < 0:
            # The mix f (t1) + (1 - f) (t2) that ends exactly at the due time.
            f = (t2 - slack) / (t2 - t1)
            best = min(best, f * e1 + (1 - f) * e2)
    return best


def offline_bound(sc: CapacityScenario) -> float:
    """The lower bound on the run's cumulative cost (EUR): CAP-B3 summed over the jobs."""
    return sum(job_bound(sc, j) for j in sc.jobs)
