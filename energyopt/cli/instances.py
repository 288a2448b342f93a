"""``energyopt instances``: the instance library (generate, verify, update-index) and
``from-profile`` (a measured profile as an instance that ``energyopt solve`` reads)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from energyopt.bench.families import SUITE_NAMES
from energyopt.cli.errors import one_line_errors


def register(sub: Any) -> None:
    p = sub.add_parser(
        "instances",
        help="the instance library (generate, verify, update-index) and from-profile",
    )
    isub = p.add_subparsers(dest="instances_command", metavar="ACTION", required=True)
    for name, fn, text in (
        ("generate", _generate, "write the library from the families' suites"),
        ("verify", _verify, "check the library byte for byte against the suites"),
    ):
        q = isub.add_parser(name, help=text)
        q.add_argument("--root", default="instances", help="library directory (default instances)")
        q.add_argument("--family", action="append", help="only this family (repeatable)")
        q.add_argument(
            "--suite", action="append", choices=SUITE_NAMES, help="only this suite (repeatable)"
        )
        q.set_defaults(func=fn)
    q = isub.add_parser(
        "update-index", help="best known objective and bound per instance from results stores"
    )
    q.add_argument("stores", nargs="+", help="results stores")
    q.add_argument("--root", default="instances")
    q.set_defaults(func=_update_index)
    _register_from_profile(isub)
    _register_envpipe_schedule(isub)


def _register_from_profile(isub: Any) -> None:
    q = isub.add_parser(
        "from-profile",
        help="a PEM (pipeline) instance from a measured profile, for 'energyopt solve'",
        description="Build a pipeline energy minimization instance from a Perseus stage "
        "profile (stage,instruction,frequency,time,energy) or a profile in energyopt's "
        "schema (energyopt profile --out, CSV or Parquet): every stage's forward and "
        "backward options at every measured SM clock.",
    )
    q.add_argument("profile", help="profile file (.csv or .parquet)")
    q.add_argument("--schedule", default="1f1b", help="pipeline schedule (default 1f1b)")
    q.add_argument("--microbatches", type=int, required=True, help="microbatches per iteration")
    q.add_argument("--stages", type=int, default=None, help="stages (default: the profile's)")
    q.add_argument("--gpu", default=None, help="blocking-power preset of the GPU (a100, a40, ...)")
    q.add_argument(
        "--p-blocking", type=float, default=None, metavar="W",
        help="blocking power per GPU in W (instead of --gpu)",
    )  # fmt: skip
    q.add_argument("--deadline", type=float, default=None, help="iteration-time deadline, s")
    q.add_argument("--name", default="", help="instance name (default: from the file name)")
    q.add_argument("--out", "-o", default=None, help="output JSON file (default: stdout)")
    q.set_defaults(func=_from_profile)


def _register_envpipe_schedule(isub: Any) -> None:
    q = isub.add_parser(
        "envpipe-schedule",
        help="a 1F1B pipeline instance rescheduled by EnvPipe's scheduler (Sec. 4.3)",
        description="Move warm-up forwards as EnvPipe's scheduler does (EnvPipe Sec. 4.3) "
        "and write the rescheduled pipeline as an explicit-DAG instance: 'energyopt solve "
        "OUT -m envpipe' is EnvPipe with its scheduler, and every other method solves the "
        "same DAG for comparison.",
    )
    q.add_argument("instance", help="a 1f1b pipeline instance (JSON)")
    q.add_argument(
        "--max-inflight", type=int, default=None, metavar="N",
        help="activations a stage may hold at once (default: no cap)",
    )  # fmt: skip
    q.add_argument(
        "--planner", default="authors", choices=("authors", "paper", "improved"),
        help="EnvPipe frequency planner the moves are scored with (default: authors)",
    )  # fmt: skip
    q.add_argument(
        "--ranking", default=None, choices=("time", "clock"),
        help="option order (default: the planner's)",
    )  # fmt: skip
    q.add_argument("--time-limit", type=float, default=None, help="seconds for the search")
    q.add_argument("--out", "-o", default=None, help="output JSON file (default: stdout)")
    q.set_defaults(func=_envpipe_schedule)


@one_line_errors
def _envpipe_schedule(args: argparse.Namespace) -> int:
    from energyopt.core.instance import load_instance
    from energyopt.pipeline.baselines.envpipe_scheduler import envpipe_warmups, rescheduled

    _check_out(args.out)
    inst = load_instance(args.instance)
    if inst.family != "pipeline":
        raise ValueError(f"{args.instance}: family {inst.family!r}; expected a pipeline instance")
    warm, stats = envpipe_warmups(
        inst,
        planner=args.planner,
        ranking=args.ranking,
        max_inflight=args.max_inflight,
        time_limit=args.time_limit,
    )
    _write(rescheduled(inst, warm), args.out)
    print(
        f"{args.instance}: warm-up forwards per stage {warm} ({stats['moves']} moves; "
        f"EnvPipe energy {stats['1f1b_energy_j']:.6g} J on 1F1B -> {stats['energy_j']:.6g} J)"
        + (f"; stopped: {stats['stopped']}" if stats["stopped"] else "")
        + (f"; wrote {args.out}" if args.out else ""),
        file=sys.stderr,
    )
    return 0


@one_line_errors
def _generate(args: argparse.Namespace) -> int:
    from energyopt.bench.families import check_no_data_lost
    from energyopt.bench.library import generate

    suites = args.suite or SUITE_NAMES
    check_no_data_lost(args.root, args.family, suites)
    files = generate(args.root, args.family, suites)
    fams = sorted({f.family for f in files})
    print(
        f"wrote {len(files)} instance files under {args.root}/ "
        f"({', '.join(fams) or 'no family has suites yet'})"
    )
    return 0


@one_line_errors
def _verify(args: argparse.Namespace) -> int:
    from energyopt.bench.library import gap_distribution, verify

    if not Path(args.root).is_dir():
        raise FileNotFoundError(f"{args.root}: no such library directory")
    problems = verify(args.root, args.family, args.suite or SUITE_NAMES)
    for line in problems:
        print(line, file=sys.stderr)
    if problems:
        print(f"{args.root}: {len(problems)} problem(s)")
        return 1
    print(f"{args.root}: library matches the suites byte for byte")
    for line in gap_distribution(args.root):
        print(f"  {line}")
    return 0


@one_line_errors
def _update_index(args: argparse.Namespace) -> int:
    from energyopt.bench.library import update_index

    changed, conflicts = update_index(args.root, args.stores)
    print(f"{changed} index row(s) improved")
    for line in conflicts:
        print(f"CONTRADICTION (a bug), row left unchanged: {line}", file=sys.stderr)
    return 1 if conflicts else 0


@one_line_errors
def _from_profile(args: argparse.Namespace) -> int:
    from energyopt.pipeline.from_profile import read_any_profile, to_pem_instance
    from energyopt.pipeline.readers import P_BLOCKING_W, blocking_power

    path = Path(args.profile)
    _check_out(args.out)
    if args.gpu is None and args.p_blocking is None:
        raise ValueError(
            f"{path}: give --p-blocking W or --gpu with a blocking-power preset "
            f"({', '.join(sorted(P_BLOCKING_W))})"
        )
    p_blocking = blocking_power(args.gpu, args.p_blocking)
    inst = to_pem_instance(
        read_any_profile(path),
        args.microbatches,
        p_blocking_w=p_blocking,
        schedule=args.schedule,
        num_stages=args.stages,
        deadline_s=args.deadline,
        name=args.name,
        where=str(path),
    )
    _write(inst, args.out)
    if args.out is not None:
        print(
            f"wrote {args.out}: {inst.name!r}, {inst.num_stages} stages x "
            f"{args.microbatches} microbatches, {inst.num_computations} computations, "
            f"P_blocking {p_blocking:g} W, id {inst.instance_id}",
            file=sys.stderr,
        )
    return 0


def _check_out(out: str | None) -> None:
    """Refuse an output path that cannot be written before any work starts."""
    from energyopt.core.paths import output_file

    if out is not None:
        output_file(out, "instance file")


def _write(instance: Any, out: str | None) -> None:
    """``instance`` as JSON to the file ``out``, or to stdout when ``out`` is None.

    The file is written whole or not at all (:func:`energyopt.core.files.atomic_write`):
    a full disk leaves no 0-byte instance behind.
    """
    if out is None:
        print(instance.to_json())
    else:
        instance.to_json(out)
