"""Output paths checked before any work: one clear error instead of an OSError traceback.

Commands that write (``profile -o``, ``bench --store``) ask these helpers first, so a
path under an existing file, a folder that may not be written, or a folder where a file
is expected fails at once, naming the path and the reason.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from energyopt.core.errors import OutputPathError


def _folder_problem(folder: Path) -> tuple[str | None, bool]:
    """Why ``folder`` cannot hold new files (``None`` when it can), and whether it exists."""
    base = next((p for p in (folder, *folder.parents) if p.exists()), Path("."))
    if not base.is_dir():
        return (f"{base} is a file", False)
    if not os.access(base, os.W_OK | os.X_OK):
        return (f"{base} is not writable", base == folder)
    return (None, base == folder)


def output_file(path: str | Path, what: str = "output file", *, create_dirs: bool = True) -> Path:
    """``path`` as a file that can be written.

    Its folder exists (or is created when ``create_dirs``) and is writable, and ``path``
    is neither a folder nor a read-only file.

    Raises
    ------
    OutputPathError
        Naming ``path`` and the reason.
    """
    p = Path(path)
    if p.is_dir():
        raise OutputPathError(f"{p}: cannot write the {what}: it is a folder")
    problem, exists = _folder_problem(p.parent)
    if problem:
        raise OutputPathError(f"{p}: cannot write the {what}: {problem}")
    if p.exists() and not os.access(p, os.W_OK):
        raise OutputPathError(f"{p}: cannot write the {what}: permission denied")
    if create_dirs and not exists:
        with raised_as_output_error(p, what):
            p.parent.mkdir(parents=True, exist_ok=True)
    return p


@contextlib.contextmanager
def raised_as_output_error(path: str | Path, what: str = "output") -> Iterator[None]:
    """Turn an ``OSError`` while writing ``path`` into a one-line :class:`OutputPathError`.

    The checks above cannot foresee everything (a full disk, a folder removed meanwhile,
    a file system that refuses even root).
    """
    try:
        yield
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise OutputPathError(f"{path}: cannot write the {what}: {reason}") from None
