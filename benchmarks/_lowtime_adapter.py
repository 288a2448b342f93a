"""Run the Perseus authors' ``lowtime`` 0.3.0 on a PEM instance (benchmarks only).

``lowtime`` is not a dependency of energyopt; this module is imported only when
it is installed. The DAG handed to lowtime is the instance's own DAG (same
computations and edges, plus a dummy source and sink), each computation with
the instance's options as ``ExecutionOption(real_time=t, cost=e - P_b * t)``
(effective energy, Perseus Eq. 4) and lowtime's exponential cost model.
"""

from __future__ import annotations

import logging
import time

import networkx as nx
import numpy as np

from energyopt.pipeline.evaluator import PemSolution
from energyopt.pipeline.instance import PemInstance


def run_lowtime(instance: PemInstance, tau_s: float = 1e-3) -> dict:
    """Crawl with lowtime; return reported (time, cost) per iteration and the plans."""
    from lowtime.cost_model import ExponentialModel
    from lowtime.operation import (
        CandidateExecutionOptions,
        DummyOperation,
        ExecutionOption,
        Operation,
        OperationSpec,
    )
    from lowtime.solver import PhillipsDessouky

    logging.getLogger("lowtime").setLevel(logging.WARNING)
    tick = time.perf_counter()
    pb = instance.p_blocking_w
    specs = {}
    for name, table in instance.tables.items():
        opts = [
            ExecutionOption(real_time=t, unit_time=tau_s, cost=e - pb * t, knob=k)
            for k, (t, e) in enumerate(zip(table.time_s, table.energy_j))
        ]
        cand = CandidateExecutionOptions(options=opts)
        specs[name] = OperationSpec(options=cand, cost_model=ExponentialModel(cand))
    fit_s = time.perf_counter() - tick
    n = instance.num_computations
    dag = nx.DiGraph()
    src, snk = n, n + 1
    dag.add_node(src, op=DummyOperation())
    dag.add_node(snk, op=DummyOperation())
    ops = []
    for i, c in enumerate(instance.computations):
        op = Operation(spec=specs[c.table])
        ops.append(op)
        dag.add_node(i, op=op)
    dag.add_edges_from(instance.edges)
    for i in range(n):
        if not instance.predecessors[i]:
            dag.add_edge(src, i)
        if not instance.successors[i]:
            dag.add_edge(i, snk)
    dag.graph["source_node"] = src
    dag.graph["sink_node"] = snk
    solver = PhillipsDessouky(dag)
    reported_time, reported_cost, choices = [], [], []
    for res in solver.run():
        reported_time.append(res.real_time)
        reported_cost.append(res.cost)
        choices.append(tuple(int(op.assigned_knob) for op in ops))
    return {
        "runtime_s": time.perf_counter() - tick,
        "fit_s": fit_s,
        "reported_time_s": np.asarray(reported_time),
        "reported_cost_j": np.asarray(reported_cost),
        "solutions": [PemSolution(c) for c in choices],
    }
