"""``benchmarks/bench_jobs.py`` counts the CPU of the run's own processes, orphans included
(issue 27: it reported the machine's busy CPU as the run's, and the cell server, orphaned
when ``bench`` exits, was never counted)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: A child that starts a grandchild burning CPU and exits at once: the grandchild is an
#: orphan, as the cell server is once ``bench`` has exited.
SCRIPT = textwrap.dedent(
    """
    import json, subprocess, sys, time
    sys.path.insert(0, sys.argv[1])
    import bench_jobs as bj

    burn = "import time\\nt = time.process_time()\\nwhile time.process_time() - t < 0.4: pass"
    spawn = (
        "import subprocess, sys\\n"
        f"subprocess.Popen([sys.executable, '-c', {burn!r}], start_new_session=True)"
    )
    bj.SUBREAPER = bj.become_subreaper() if sys.argv[2] == "1" else False
    before = bj.children_cpu_seconds()
    subprocess.run([sys.executable, "-c", spawn], check=True)  # returns before the burn ends
    bj.reap_left_behind()
    if not bj.SUBREAPER:
        time.sleep(1.5)  # let the orphan finish elsewhere
    print(json.dumps(bj.children_cpu_seconds() - before))
    """
)


def _own_cpu(subreaper: bool) -> float:
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(ROOT / "benchmarks"), "1" if subreaper else "0"],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    return float(run.stdout)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="Linux only (prctl, /proc)")
def test_orphans_cpu_is_counted_only_as_their_subreaper():
    # The orphan burns 0.4 CPU-s; the two short interpreters add their own start-up.
    assert _own_cpu(subreaper=True) >= 0.4
    # Without the subreaper the orphan is init's: its CPU is lost, as it was before.
    assert _own_cpu(subreaper=False) < 0.4
