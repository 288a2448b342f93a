"""Which code computed a cell, and where a report's numbers come from.

:func:`code_version`: the package version, the git commit of a checkout, and a digest of
the package's sources (so that an uncommitted change counts as other code). The store
records it with every cell; ``bench`` compares it with the running code's and says when it
reuses cells that other code computed (``--recompute-stale`` runs them again).

:func:`provenance`: the lines at the top of every gap report (:mod:`energyopt.bench.report`):
the code that computed the cells and the code writing the report, the date, CPU, Python and
solver versions, and the cells' time limits, so that a figure can be traced to the code and
the machine that made it.
"""

from __future__ import annotations

import datetime
import functools
import hashlib
import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

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


#: Solver packages whose versions a report lists (distribution name, label).
SOLVERS = (("highspy", "HiGHS (highspy)"), ("ortools", "OR-Tools"), ("pyomo", "Pyomo"))


def provenance(
    cells: Any, runs: list[dict[str, Any]], cell_versions: list[str] = ()
) -> list[tuple[str, str]]:
    """(label, value) lines for the top of a report.

    Parameters
    ----------
    cells
        :func:`energyopt.bench.frames.read_results`'s frame (time limits).
    runs
        The store's runs (their ids and start times).
    cell_versions
        The stored :func:`code_version` of the cells (the code that computed them).
    """
    lines = [
        ("energyopt version", energyopt.__version__),
        ("cells computed by", "; ".join(sorted({describe(v) for v in cell_versions})) or "-"),
        ("report written by", code_version()),
        ("report written", _now()),
        ("CPU", cpu_name()),
        ("Python", platform.python_version()),
    ]
    lines += [(label, _version(dist)) for dist, label in SOLVERS]
    limits = sorted({float(x) for x in cells["time_limit_s"].dropna()}) if len(cells) else []
    lines.append((
        "time limits (s)",
        ", ".join(f"{x:g}" for x in limits) if limits else "none recorded",
    ))  # fmt: skip
    starts = sorted(str(r.get("started_at", "")) for r in runs if r.get("started_at"))
    if starts:
        span = f"{starts[0]} to {starts[-1]}" if len(starts) > 1 else starts[0]
        lines.append(("runs started", span))
    return lines


def _now() -> str:
    now = datetime.datetime.now(datetime.timezone.utc)  # datetime.UTC: Python 3.11+
    return now.strftime("%Y-%m-%d %H:%M UTC")


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def cpu_name() -> str:
    """The CPU's model name and the number of logical CPUs."""
    name = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    name = name or platform.processor() or platform.machine() or "unknown"
    return f"{name}, {os.cpu_count() or '?'} logical CPUs"
