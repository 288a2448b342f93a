"""The ``energyopt`` command line: one module per group of subcommands.

========================  ==============================================================
``cli/solve.py``          ``solve`` (one instance, one or more methods), ``methods``
``cli/bench.py``          ``bench`` (batch runs into a results store), ``report``, ``demo``
``cli/instances.py``      ``instances`` generate / verify / update-index / from-profile
``cli/profile.py``        ``profile`` (sweep a GPU, import a published profile)
``cli/options.py``        ``-o KEY=VALUE`` method options
========================  ==============================================================

Each module in :data:`SUBCOMMAND_MODULES` defines ``register(subparsers)``. Building the
parser imports no family, solver or pandas (``energyopt --help`` stays fast); a command
imports what it runs when it runs.
"""

from __future__ import annotations

import sys


def _quiet_interrupt(kind: type[BaseException], value: BaseException, tb: object) -> None:
    """A Ctrl-C that ends the command before :func:`main` can catch it (while its modules
    import) prints one line, not a traceback; the interpreter still exits as interrupted
    (status 130 from a shell). Every other exception goes to the previous hook."""
    if issubclass(kind, KeyboardInterrupt):
        print("energyopt: interrupted", file=sys.stderr)
        return
    _PREVIOUS_HOOK(kind, value, tb)


_PREVIOUS_HOOK = sys.excepthook
sys.excepthook = _quiet_interrupt

import argparse  # noqa: E402  (after the hook: a Ctrl-C during these imports is quiet too)
import importlib  # noqa: E402
import os  # noqa: E402
import time  # noqa: E402

from energyopt.core.instance import InstanceError  # noqa: E402

SUBCOMMAND_MODULES = (
    "energyopt.cli.solve",
    "energyopt.cli.bench",
    "energyopt.cli.instances",
    "energyopt.cli.profile",
)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("energyopt")
    except PackageNotFoundError:  # running from a source tree that is not installed
        return "unknown"


class _VersionAction(argparse.Action):
    """``--version``: the installed version, looked up only when asked (it is slow)."""

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        print(f"energyopt {_version()}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="energyopt",
        description="Exact formulations beside published heuristics for GPU training energy.",
    )
    parser.add_argument(
        "--version", action=_VersionAction, nargs=0, help="show the version and exit"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue
            raise
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    global STARTED
    STARTED = time.perf_counter()
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
    except KeyboardInterrupt:  # while the subcommands' modules import
        print("energyopt: interrupted", file=sys.stderr)
        return 130
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except (InstanceError, FileNotFoundError, ValueError) as exc:
        print(f"energyopt {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"energyopt {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader of our output went away (``energyopt ... | head``): stop quietly.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except OSError as exc:  # a path the checks could not foresee: one line, no traceback
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"energyopt {args.command}: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
