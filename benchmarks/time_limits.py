"""The time-limit contract in wall-clock seconds: the tests ``make test`` leaves out.

Usage::

    .venv/bin/python benchmarks/time_limits.py [pytest arguments]

``make test`` checks every method's time limit in a way that other processes cannot
break (``tests/timing.py``: wall seconds, or else the method's own CPU seconds). The
strict wall-clock checks are marked ``wallclock`` and deselected there; this runs
them, and prints the machine's load average before and after, since on a loaded
machine they fail for reasons outside the code. Run it on an idle machine.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "wallclock",
           "-n", "0", "tests", *sys.argv[1:]]  # fmt: skip
    rc = subprocess.call(cmd, cwd=ROOT)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
