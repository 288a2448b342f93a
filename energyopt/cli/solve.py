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
    p.add_argument("--json", action="store_true", help="print results as JSON lines")
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
    from energyopt.core.instance import load_instance
    from energyopt.core.registry import check_options, get_method, solve
    from energyopt.core.table import result_table

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
    if args.json:
        for r in results:
            print(r.to_json())
    else:
        print(f"instance {args.instance} ({instance.family}, id {instance.instance_id})")
        print(result_table(results))
        for r in results:
            if r.message:
                print(f"{r.method}: {r.message}")
    return 0 if all(r.termination.value != "error" for r in results) else 1


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
