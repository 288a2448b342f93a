"""The README's main job in one call: bench the smoke suite, then write the gap report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from energyopt.bench.report import make_report
from energyopt.bench.runner import plan_cells, run_bench


def run(
    out_dir: str | Path = "out",
    *,
    suite: str = "smoke",
    jobs: int = 2,
    time_limit_s: float = 30.0,
    seeds: tuple[int, ...] = (0,),
    progress: bool = True,
    recompute_stale: bool = False,
) -> dict[str, Any]:
    """Equivalent to::

        energyopt bench --suite smoke --jobs 2 --time-limit 30 --store OUT/results.sqlite
        energyopt report OUT/results.sqlite --out OUT/report

    Restartable like ``bench``: a second call reuses the cells already stored, and says
    how many of them other code computed (``recompute_stale`` computes those again).

    Returns
    -------
    dict
        ``store`` and ``report`` paths, the run ``summary`` and the ``report`` object.
    """
    out = Path(out_dir)
    store = out / "results.sqlite"
    cells = plan_cells(suite=suite, seeds=seeds, time_limit_s=time_limit_s)
    summary = run_bench(
        cells,
        store,
        jobs=jobs,
        progress=progress,
        recompute_stale=recompute_stale,
        argv=["energyopt.bench.demo.run", str(out_dir)],
    )
    print(summary)
    report = make_report(store, out / "report")
    print(f"report: {out / 'report' / 'index.html'} and {out / 'report' / 'summary.md'}")
    for bug in report.bugs:
        print(f"CONTRADICTION (a bug): {bug}")
    return {
        "store": store,
        "report": out / "report" / "index.html",
        "summary": summary,
        "report_data": report,
    }
