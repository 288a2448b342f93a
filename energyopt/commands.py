"""``energyopt solve`` and ``energyopt demo``."""

from __future__ import annotations

import argparse
import json
from typing import Any

from energyopt.core.instance import load_instance
from energyopt.core.registry import methods, solve
from energyopt.core.table import result_table


def register(sub: Any) -> None:
    p = sub.add_parser("solve", help="solve one instance with one or more methods")
    p.add_argument("instance", help="instance JSON file (any family)")
    p.add_argument(
        "--method",
        "-m",
        action="append",
        required=True,
        help="method name; repeat for several (see 'energyopt methods')",
    )
    p.add_argument(
        "--deadline",
        type=float,
        default=None,
        help="pipeline family: iteration-time deadline in seconds (overrides the file's)",
    )
    p.add_argument("--time-limit", type=float, default=None, help="seconds per method")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument(
        "--option",
        "-o",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="method option, VALUE parsed as JSON when it can be (repeatable)",
    )
    p.add_argument(
        "--solver",
        default=None,
        metavar="NAME",
        help="MILP solver of the Pyomo-built exact methods (default highs; e.g. scip, "
        "gurobi, any Pyomo contrib.solver or appsi_* name); other methods ignore it",
    )
    p.add_argument("--json", action="store_true", help="print results as JSON lines")
    p.set_defaults(func=_solve)

    p = sub.add_parser("methods", help="list the registered methods of a family")
    p.add_argument("family", nargs="?", default=None)
    p.add_argument(
        "--json", action="store_true", help="one JSON list: kind, frontier, options and defaults"
    )
    p.set_defaults(func=_methods)

    p = sub.add_parser(
        "demo", help="the README's main job: smoke suite of every family, then the gap report"
    )
    p.add_argument("--out", default="out", help="output directory (default: out)")
    p.add_argument("--jobs", type=int, default=2, help="cells at the same time (default 2)")
    p.set_defaults(func=_demo)


def _parse_options(items: list[str]) -> dict[str, Any]:
    opts = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--option {item!r}: expected KEY=VALUE")
        try:
            opts[key] = json.loads(value)
        except json.JSONDecodeError:
            opts[key] = value
    return opts


def _solve(args: argparse.Namespace) -> int:
    instance = load_instance(args.instance)
    if args.deadline is not None:
        if instance.family != "pipeline":
            raise ValueError(f"--deadline applies to the pipeline family, not {instance.family!r}")
        instance = instance.with_deadline(args.deadline)
    options = _parse_options(args.option)
    if args.solver is not None:
        from energyopt.core.milp_solvers import check_solver

        check_solver(args.solver)
    results = [
        solve(
            instance,
            m,
            time_limit=args.time_limit,
            seed=args.seed,
            **_with_solver(instance.family, m, options, args.solver),
        )
        for m in args.method
    ]
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


def _with_solver(
    family: str, method: str, options: dict[str, Any], solver: str | None
) -> dict[str, Any]:
    """``options`` plus ``solver`` for the methods that take a MILP solver."""
    import inspect

    m = methods(family).get(method)
    if solver is None or m is None:
        return options
    takes = "solver" in inspect.signature(m.function).parameters
    return {**options, "solver": solver} if takes else options


def _methods(args: argparse.Namespace) -> int:
    from energyopt.core.registry import FAMILY_MODULES

    families = [args.family] if args.family else sorted(FAMILY_MODULES)
    if args.family is not None and args.family not in FAMILY_MODULES:
        raise ValueError(f"family {args.family!r}: not one of {', '.join(sorted(FAMILY_MODULES))}")
    rows = [method_info(m) for f in families for _, m in sorted(methods(f).items())]
    if args.json:
        print(json.dumps(rows, indent=1, default=repr))
        return 0
    print(f"{'family':10s} {'method':22s} {'kind':9s} description; options (default)")
    for r in rows:
        opts = ", ".join(f"{k}={v!r}" for k, v in r["options"].items())
        print(f"{r['family']:10s} {r['method']:22s} {r['kind']:9s} {r['description']}")
        if opts:
            print(f"{'':43s} options: {opts}")
    return 0


def method_info(m: Any) -> dict[str, Any]:
    """A registered method as a plain dict: kind, frontier flag, options with defaults."""
    import inspect

    params = inspect.signature(m.function).parameters
    options = {
        k: (None if p.default is inspect.Parameter.empty else p.default)
        for k, p in params.items()
        if p.kind is inspect.Parameter.KEYWORD_ONLY and k not in ("time_limit", "seed")
    }
    return {
        "family": m.family,
        "method": m.name,
        "kind": "exact" if m.exact else "heuristic",
        "frontier": m.frontier,
        "description": m.description,
        "options": options,
    }


def _demo(args: argparse.Namespace) -> int:
    from energyopt.bench.demo import run

    out = run(args.out, jobs=args.jobs)
    # A contradiction (an objective below a proven bound) is a bug somewhere: fail loudly.
    return 1 if out["report_data"].bugs else 0
