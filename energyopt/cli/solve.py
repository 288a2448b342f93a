"""``energyopt solve`` (one instance, one or more methods) and ``energyopt methods``."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from energyopt.cli.errors import seed_argument


def register(sub: Any) -> None:
    p = sub.add_parser(
        "solve",
        help="solve one instance with one or more methods",
        description="Solve an instance JSON file (any family; 'energyopt instances "
        "from-profile' writes one from a measured profile) with each method given.",
    )
    p.add_argument("instance", help="instance JSON file (any family)")
    add_method_argument(p, required=True)
    p.add_argument(
        "--deadline",
        type=float,
        default=None,
        help="iteration-time deadline in seconds, for families whose instances have one "
        "(overrides the file's)",
    )
    p.add_argument(
        "--time-limit", type=float, default=None, help="seconds per method, counted from its start"
    )
    p.add_argument("--seed", type=seed_argument, default=None)
    add_option_argument(p, "method option, VALUE parsed as JSON when it can be (repeatable)")
    p.add_argument(
        "--solver",
        default=None,
        metavar="NAME",
        help="MILP solver of the Pyomo-built exact methods (default highs; e.g. scip, "
        "gurobi, any Pyomo contrib.solver or appsi_* name); other methods ignore it",
    )
    p.add_argument(
        "--log",
        "--tee",
        dest="log",
        action="store_true",
        help="show the solver's log (HiGHS/Pyomo tee, CP-SAT search progress)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print results as JSON lines (a frontier as its summary, see --full-frontier)",
    )
    p.add_argument(
        "--full-frontier",
        action="store_true",
        help="with --json: every frontier point with its plan (can be tens of MB)",
    )
    p.set_defaults(func=_solve)

    p = sub.add_parser(
        "methods",
        help="list the registered methods of a family: kind, options and defaults",
    )
    p.add_argument("family", nargs="?", default=None, help="one family (default: all)")
    p.add_argument(
        "--json", action="store_true", help="one JSON list: kind, frontier, options and defaults"
    )
    p.set_defaults(func=_methods)


def add_method_argument(p: argparse.ArgumentParser, *, required: bool) -> None:
    """``--method/-m NAME``, repeatable: the one way every command takes methods."""
    p.add_argument(
        "--method",
        "-m",
        action="append",
        required=required,
        metavar="NAME",
        help="method name; repeat for several (see 'energyopt methods FAMILY')",
    )


def add_option_argument(p: argparse.ArgumentParser, text: str) -> None:
    p.add_argument("--option", "-o", action="append", default=[], metavar="KEY=VALUE", help=text)


#: Share of ``--time-limit`` that the frontiers' bound curve gets after the methods.
BOUND_SHARE = 0.25

#: Seconds kept back from a method's time limit for printing the result and exiting
#: (HiGHS and Pyomo objects are torn down at exit).
EXIT_RESERVE_S = 0.3


def _time_left(time_limit: float | None, since: float) -> float | None:
    """``time_limit`` less the time elapsed since ``since`` and :data:`EXIT_RESERVE_S`."""
    if time_limit is None:
        return None
    # A method always gets a positive limit (some refuse 0): the least it gets is a
    # hundredth of the limit.
    left = time_limit - (time.perf_counter() - since) - EXIT_RESERVE_S
    return max(0.01 * time_limit, left)


def _solve(args: argparse.Namespace) -> int:
    from energyopt.cli.options import parse_options
    from energyopt.core.compare import cross_bounded
    from energyopt.core.instance import load_instance
    from energyopt.core.registry import check_options, get_method, solve

    if args.full_frontier and not args.json:
        raise ValueError("--full-frontier: only with --json (the table prints a summary)")
    instance = load_instance(args.instance)
    if args.deadline is not None:
        if not hasattr(instance, "with_deadline"):
            raise ValueError(f"--deadline: {instance.family!r} instances have no deadline")
        instance = instance.with_deadline(args.deadline)
    options = parse_options(args.option)
    if args.time_limit is not None and not args.time_limit > 0:
        raise ValueError(f"--time-limit {args.time_limit:g}: must be a positive number of seconds")
    if args.solver is not None:
        from energyopt.core.milp_solvers import check_solver

        check_solver(args.solver)
    runs = []
    for name in args.method:
        m = get_method(instance.family, name)
        opts = with_switches(m, options, solver=args.solver, log=args.log)
        check_options(m, opts)  # every method's options, before any method runs
        runs.append((name, opts))
    results = []
    for name, opts in runs:
        # Each method's limit counts from its own start, as the help says ("seconds per
        # method"): imports and reading the instance (about 4 s under load) are not in it.
        since = time.perf_counter()
        limit = _time_left(args.time_limit, since)
        results.append(solve(instance, name, time_limit=limit, seed=args.seed, **opts))
    # Every method against the best bound of the call; frontiers get a bound per point.
    # The bound curve is computed once, after the methods, in a quarter of the time limit
    # (stopped early it is looser, still valid): the command ends near its limit.
    curve_limit = None if args.time_limit is None else BOUND_SHARE * args.time_limit
    results = cross_bounded(instance, results, time_limit=curve_limit)
    if args.json:
        for r in results:
            print(json.dumps(r.to_dict(full_frontier=args.full_frontier)))
    else:
        print(f"instance {args.instance} ({instance.family}, id {instance.instance_id})")
        print(comparison_table(results))
        if any(r.frontier for r in results):
            print()
            print(frontier_table(results))
        for r in results:
            if r.message:
                print(f"{r.method}: {r.message}")
    return 0 if all(r.termination.value != "error" for r in results) else 1


def _pct(x: float | None) -> str | None:
    return None if x is None else f"{100 * x:.4f}%"


def comparison_table(results: list[Any]) -> str:
    """One row per method: its own bound and gap, and its gap to the best bound of the call."""
    from energyopt.core.table import format_table

    rows = [
        [
            r.method, r.termination.value, r.status.value, r.objective, r.bound, _pct(r.gap),
            r.extra.get("best_bound"), r.extra.get("proven_by"),
            _pct(r.extra.get("gap_to_best_bound")), f"{r.runtime_s:.3f}",
            f"{r.solver} {r.solver_version}".strip(),
        ]
        for r in results
    ]  # fmt: skip
    head = ["method", "termination", "status", "objective", "bound", "gap", "best bound",
            "proven by", "gap to best", "runtime_s", "solver"]  # fmt: skip
    return format_table(head, rows)


def frontier_table(results: list[Any]) -> str:
    """The frontier summary of each frontier result (:mod:`energyopt.core.frontiergap`)."""
    from energyopt.core.frontiergap import SHARE_LEVELS, share_key
    from energyopt.core.table import format_table

    shares = [share_key(x) for x in SHARE_LEVELS]
    rows = []
    for r in results:
        s = r.frontier_summary
        if s is None:
            continue
        rows.append([r.method, s["points"], s["points_with_bound"], s["below_bound"],
                     _pct(s["gap_max"]), _pct(s["gap_mean"]), _pct(s["gap_median"]),
                     *(_pct(s.get(k)) for k in shares), _pct(s.get("area_ratio"))])  # fmt: skip
    head = ["frontier of", "points", "with bound", "below bound", "gap max", "gap mean",
            "gap median", *(f"time {k.replace('_', ' ')}" for k in shares),
            "area ratio"]  # fmt: skip
    return format_table(head, rows)


def with_switches(
    method: Any, options: dict[str, Any], *, solver: str | None = None, log: bool = False
) -> dict[str, Any]:
    """``options`` plus ``solver`` and ``tee`` for the methods that take them.

    ``--solver`` applies to methods with a ``solver`` option (the Pyomo-built MILPs);
    ``--log`` sets ``tee`` (every exact method that calls HiGHS, Pyomo or CP-SAT
    takes it). A method without a solver log gets a note on standard error.
    """
    from energyopt.core.registry import method_options

    takes = method_options(method)
    out = dict(options)
    if solver is not None and "solver" in takes:
        out["solver"] = solver
    if log:
        if "tee" in takes:
            out["tee"] = True
        else:
            print(f"--log: method {method.name!r} runs no external solver; no log", file=sys.stderr)
    return out


def _methods(args: argparse.Namespace) -> int:
    from energyopt.core.registry import families, methods

    known = families()
    if args.family is not None and args.family not in known:
        raise ValueError(f"family {args.family!r}: not one of {', '.join(known)}")
    rows = [
        method_info(m)
        for f in ([args.family] if args.family else known)
        for _, m in sorted(methods(f).items())
    ]
    if args.json:
        print(json.dumps(rows, indent=1, default=repr))
        return 0
    print(f"{'family':10s} {'method':22s} {'kind':9s} description; options (default, range)")
    for r in rows:
        opts = ", ".join(f"{k}={o['default']!r} ({o['range']})" for k, o in r["options"].items())
        print(f"{r['family']:10s} {r['method']:22s} {r['kind']:9s} {r['description']}")
        if opts:
            print(f"{'':43s} options: {opts}")
        if r["passes_options_to"]:
            print(f"{'':43s} and the options of the method named by {r['passes_options_to']}")
    return 0


def method_info(m: Any) -> dict[str, Any]:
    """A registered method as a plain dict, from its declaration: kind, frontier flag, and
    each option's type, range or choices, default and description."""
    return {
        "family": m.family,
        "method": m.name,
        "kind": "exact" if m.exact else "heuristic",
        "frontier": m.frontier,
        "description": m.description,
        "options": {
            o.name: {
                **{k: v for k, v in o.to_dict().items() if k != "name"},
                "range": o.range_text(),
            }
            for o in m.options
        },
        "passes_options_to": m.passes_options_to,
    }
