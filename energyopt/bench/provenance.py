"""Where a report's numbers come from: package version, git commit, date, CPU, solvers, limits.

The top of every gap report (:mod:`energyopt.bench.report`) lists these, so that a
figure can be traced to the code and the machine that made it. The report is written
now, from cells computed earlier: the date, commit and CPU are those of the report's
writing, and the time limits and run ids are the cells' own.
"""

from __future__ import annotations

import datetime
import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

#: Solver packages whose versions are listed (distribution name, label).
SOLVERS = (("highspy", "HiGHS (highspy)"), ("ortools", "OR-Tools"), ("pyomo", "Pyomo"))


def provenance(cells: Any, runs: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(label, value) lines for the top of a report.

    Parameters
    ----------
    cells
        :func:`energyopt.bench.frames.read_results`'s frame (time limits).
    runs
        The store's runs (their ids and start times).
    """
    import energyopt

    lines = [
        ("energyopt version", energyopt.__version__),
        ("git commit (report code)", git_commit() or "not run from a git checkout"),
        ("report written", _now()),
        ("CPU", cpu_name()),
        ("Python", platform.python_version()),
    ]
    for dist, label in SOLVERS:
        lines.append((label, _version(dist)))
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


def git_commit() -> str | None:
    """The checkout's commit (with ``-dirty`` when it has changes), or ``None``."""
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "describe", "--always", "--dirty", "--abbrev=12"],
            capture_output=True, text=True, timeout=10, check=True,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def cpu_name() -> str:
    """The CPU's model name and the number of logical CPUs."""
    import os

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
