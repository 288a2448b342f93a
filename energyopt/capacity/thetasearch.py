"""The ``patterns`` method: enumerate theta, solve a pattern MILP at each, prune by bounds.

formulations/capacity.md Section 8. theta (the remaining time of the first job to
end) takes one of finitely many values, the jobs' remaining times. At each value T
the problem is the small MILP P(T) of :mod:`energyopt.capacity.thetamodel`, and the
optimum is the least of them (or the all-postponed schedule, theta = H). The LP
relaxation of P'(T) (no job ends at T required) bounds P(T') for every T' >= T,
because raising T removes configurations and raises every cost: so the values are
scanned upward and the scan stops once that bound reaches the incumbent.

Every incumbent is an assignment rebuilt node by node from a model solution and
scored by the evaluator; the bound is the least of the per-theta MILP bounds and the
bound of the values not scanned.
"""

from __future__ import annotations

import dataclasses
import math

from energyopt.capacity import thetamodel
from energyopt.capacity.evaluator import Assignment, evaluate
from energyopt.capacity.greedy import randomized_greedy
from energyopt.capacity.instance import CapacityInstance
from energyopt.capacity.patterns import Aggregation, aggregate, theta_candidates
from energyopt.core.timelimit import TimeBudget


@dataclasses.dataclass
class SearchOutcome:
    """What the scan found: the best evaluated schedule, a proven bound, and the work done."""

    assignment: Assignment | None
    objective: float
    bound: float | None
    complete: bool
    """Every theta value was solved or pruned: ``bound`` is the scan's final bound."""
    thetas: int
    """Candidate values of theta."""
    scanned: int = 0
    """Values looked at (LP bound computed) before the scan stopped."""
    milps: int = 0
    """Values whose MILP P(T) was solved."""
    source: str = "greedy"
    """What found the incumbent: ``greedy``, ``postpone-all`` or ``patterns``."""


def rebuild(
    instance: CapacityInstance, agg: Aggregation, model: thetamodel.ThetaModel, values
) -> Assignment:
    """The assignment of an integral model solution, node by node.

    Per class and GPUs left r, the nodes with r left (host nodes by their state, free
    nodes for r = G) take the chosen patterns one each (CAP-13 makes the counts
    agree); the jobs moved to (class, g) fill the patterns' g-GPU slots (CAP-14).
    """
    assign: list[tuple[int, int] | None] = [None] * instance.num_jobs
    nodes_left: dict[tuple[int, int], list[int]] = {}
    for c, cls in enumerate(agg.classes):
        nodes_left[c, cls.num_gpus] = list(cls.free_nodes)
    for s, col in model.w.items():
        if values[col] > 0.5:
            for j in s.kept:
                assign[j] = (s.node, agg.keeps[j].g)
            nodes_left.setdefault((agg.class_of_node[s.node], s.residual), []).append(s.node)
    slots: dict[tuple[int, int], list[int]] = {}
    for (c, r, q), col in model.v.items():
        for _ in range(round(values[col])):
            node = nodes_left[c, r].pop()
            for g, count in enumerate(q, start=1):
                slots.setdefault((c, g), []).extend([node] * count)
    for mv, col in model.x.items():
        if values[col] > 0.5:
            assign[mv.job] = (slots[mv.cls, mv.g].pop(), mv.g)
    return tuple(assign)


class _Scan:
    """The incumbent and the bookkeeping of one scan."""

    def __init__(self, instance: CapacityInstance, budget: TimeBudget, rel_gap: float) -> None:
        self.instance, self.budget, self.rel_gap = instance, budget, rel_gap
        self.assignment: Assignment | None = None
        self.objective = math.inf
        self.source = ""

    def offer(self, assignment: Assignment, source: str) -> None:
        """Keep ``assignment`` if the evaluator accepts it and it is the best so far."""
        ev = evaluate(self.instance, assignment)
        if ev.feasible and ev.objective < self.objective:
            self.assignment, self.objective, self.source = assignment, ev.objective, source

    def cutoff(self) -> float:
        """A bound at or above this proves the incumbent within ``rel_gap``."""
        return self.objective - self.rel_gap * abs(self.objective)

    @property
    def scale(self) -> float:
        return self.objective if math.isfinite(self.objective) and self.objective > 0 else 1.0


def check_options(*, rel_gap: float, greedy_iterations: int) -> None:
    """A ``ValueError`` naming the option when ``rel_gap`` or ``greedy_iterations`` is bad."""
    if isinstance(rel_gap, bool) or not isinstance(rel_gap, (int, float)):
        raise ValueError(f"option rel_gap = {rel_gap!r}: must be a number")
    if not 0.0 <= rel_gap < 1.0:  # NaN fails too
        raise ValueError(f"option rel_gap = {rel_gap!r}: must be in [0, 1)")
    if isinstance(greedy_iterations, bool) or not isinstance(greedy_iterations, int):
        raise ValueError(f"option greedy_iterations = {greedy_iterations!r}: must be an integer")
    if greedy_iterations < 1:
        raise ValueError(f"option greedy_iterations = {greedy_iterations!r}: must be >= 1")


def search(
    instance: CapacityInstance,
    *,
    time_limit: float | None = None,
    seed: int = 0,
    rel_gap: float = 1e-6,
    greedy_iterations: int = 100,
) -> SearchOutcome:
    """Scan theta upward; return the best schedule found and a proven lower bound.

    Parameters
    ----------
    time_limit
        Seconds for everything (greedy, models, HiGHS). When it runs out the bound
        is that of the values scanned and, for the rest, the last P'(T) bound.
    rel_gap
        The scan prunes a value of theta whose bound is within this relative gap of
        the incumbent, and each MILP stops at it.
    greedy_iterations
        Randomized Greedy iterations for the first incumbent (at most a tenth of the
        time limit).
    """
    check_options(rel_gap=rel_gap, greedy_iterations=greedy_iterations)
    budget = TimeBudget(time_limit)
    scan = _Scan(instance, budget, rel_gap)
    share = None if budget.time_limit is None else 0.1 * budget.time_limit
    greedy, _, _ = randomized_greedy(
        instance,
        max_iterations=greedy_iterations,
        seed=seed,
        budget=TimeBudget(share, start=budget.start),
    )
    scan.offer(greedy, "greedy")
    idle_bound = math.inf
    if not instance.work_conserving:
        # theta = H when nothing runs: the one schedule that no P(T) contains.
        idle = (None,) * instance.num_jobs
        scan.offer(idle, "postpone-all")
        idle_bound = evaluate(instance, idle).objective
    agg = aggregate(instance)
    thetas = theta_candidates(agg)
    out = _scan_thetas(instance, agg, thetas, scan)
    out.bound = None if out.bound is None else min(out.bound, idle_bound)
    return out


def _scan_thetas(
    instance: CapacityInstance, agg: Aggregation, thetas: list[float], scan: _Scan
) -> SearchOutcome:
    """The loop over theta values (ascending); see :func:`search`."""
    solved_bound = math.inf  # least bound over the values solved or pruned one by one
    tail_bound = -math.inf  # a bound for every value not yet solved
    scanned = milps = 0
    complete = True
    for T in thetas:
        if scan.budget.expired():
            complete = False
            break
        scanned += 1
        relaxed = _solve(instance, agg, T, scan, attained=False, integral=False)
        if relaxed is None:
            complete = False
            break
        tail_bound = relaxed.bound
        if tail_bound >= scan.cutoff():
            break
        exact_lp = _solve(instance, agg, T, scan, attained=True, integral=False)
        if exact_lp is None:  # out of time: the tail bound covers T
            complete = False
            break
        if exact_lp.bound >= scan.cutoff():
            solved_bound = min(solved_bound, exact_lp.bound)
            continue
        milps += 1
        model = thetamodel.build(instance, agg, T, attained=True)
        res = thetamodel.solve(
            model,
            integral=True,
            time_limit=scan.budget.remaining(),
            rel_gap=scan.rel_gap,
            scale=scan.scale,
        )
        if res.values is not None:
            scan.offer(rebuild(instance, agg, model, res.values), "patterns")
        if res.status not in ("optimal", "infeasible"):
            # Stopped by the time limit, perhaps before HiGHS had a dual bound (-inf):
            # LP(P'(T)) already bounds T and every later value (the tail).
            complete = False
            break
        solved_bound = min(solved_bound, res.bound)
    else:
        tail_bound = math.inf  # every value solved or pruned
    bound = min(solved_bound, tail_bound) if math.isfinite(tail_bound) or complete else None
    if bound is not None and not math.isfinite(bound):
        bound = None
    return SearchOutcome(
        assignment=scan.assignment,
        objective=scan.objective,
        bound=bound,
        complete=complete,
        thetas=len(thetas),
        scanned=scanned,
        milps=milps,
        source=scan.source,
    )


def _solve(
    instance: CapacityInstance,
    agg: Aggregation,
    theta_s: float,
    scan: _Scan,
    *,
    attained: bool,
    integral: bool,
) -> thetamodel.Solved | None:
    """One LP or MILP at ``theta_s``; ``None`` when it could not finish in the time left."""
    model = thetamodel.build(instance, agg, theta_s, attained=attained)
    res = thetamodel.solve(
        model, integral=integral, time_limit=scan.budget.remaining(), scale=scan.scale
    )
    if res.status in ("optimal", "infeasible"):
        return res
    return None
