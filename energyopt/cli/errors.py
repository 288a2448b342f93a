"""Errors of the file system and of SQLite as the CLI's one-line ``ValueError``."""

from __future__ import annotations

import argparse
import functools
import sqlite3
from collections.abc import Callable


def one_line_errors(fn: Callable[[argparse.Namespace], int]) -> Callable[..., int]:
    """Turn file-system and SQLite errors into the CLI's one-line ``ValueError``."""

    @functools.wraps(fn)
    def wrapper(args: argparse.Namespace) -> int:
        try:
            return fn(args)
        except sqlite3.Error as exc:
            # Name the file: a page-level corruption surfaces here, far from the open.
            where = getattr(args, "store", None) or "results store"
            raise ValueError(f"{where}: {exc}") from None
        except (IsADirectoryError, PermissionError, NotADirectoryError) as exc:
            raise ValueError(f"{exc.filename}: {exc.strerror}") from None

    return wrapper


def seed_argument(text: str) -> int:
    """``--seed`` / ``--seeds``: a non-negative integer (:func:`energyopt.core.validate.seed`,
    the rule ``solve`` applies to every method), refused by the parser before any work."""
    from energyopt.core.validate import seed

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    try:
        return int(seed(value))  # type: ignore[arg-type]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
