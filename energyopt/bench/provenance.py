"""Which code computed a cell: the package version, the git commit of a checkout, and a
digest of the package's sources (so that an uncommitted change counts as other code).

The store records :func:`code_version` with every cell; ``bench`` compares it with the
running code's and says when it reuses cells that other code computed
(``--recompute-stale`` runs them again).
"""

from __future__ import annotations

import functools
import hashlib
import subprocess
from pathlib import Path

import energyopt

#: Files whose content is the code (templates shape the report, not the results, but a
#: digest that is too wide only ever says "recompute", never reuses wrongly).
_SOURCE_SUFFIXES = (".py", ".j2", ".json")


@functools.cache
def code_version() -> str:
    """``"<version> commit=<sha|none> sources=<digest>"`` of the running package.

    Examples
    --------
    >>> code_version().startswith(energyopt.__version__ + " commit=")
    True
    """
    root = Path(energyopt.__file__).resolve().parent
    commit = _git_commit(root.parent) or "none"
    return f"{energyopt.__version__} commit={commit} sources={_digest(root)}"


def _digest(package: Path) -> str:
    """SHA-256 (first 12 hex digits) over the package's source files, names and contents."""
    h = hashlib.sha256()
    for path in sorted(p for p in package.rglob("*") if p.suffix in _SOURCE_SUFFIXES):
        if "__pycache__" in path.parts or not path.is_file():
            continue
        h.update(path.relative_to(package).as_posix().encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()[:12]


def _git_commit(folder: Path) -> str | None:
    """The commit checked out at ``folder`` (12 hex digits), or ``None`` outside a checkout
    (an installed package) or without git."""
    if not (folder / ".git").exists():
        return None
    try:
        out = subprocess.run(
            ["git", "-C", str(folder), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    sha = out.stdout.strip()
    return sha[:12] or None


def describe(version: str) -> str:
    """A stored :func:`code_version` for messages (``"unrecorded"`` for cells stored before
    the store recorded it)."""
    return version or "unrecorded"
