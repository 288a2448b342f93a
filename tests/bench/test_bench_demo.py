"""The README's main job, wired: bench then report into one output directory."""

from __future__ import annotations

from energyopt.bench import demo
from energyopt.bench.runner import plan_cells


def test_demo_writes_store_and_report(tmp_path, instance_files, monkeypatch):
    # The real job runs the smoke suite of every family (about 100 cells, seconds on 2
    # cores); here two tiny instances stand in for it.
    def tiny_plan(**kwargs):
        assert kwargs["suite"] == "smoke"
        return plan_cells(files=instance_files[:2], methods=["highs"], time_limit_s=20)

    monkeypatch.setattr(demo, "plan_cells", tiny_plan)
    out = demo.run(tmp_path / "out", progress=False)
    assert out["store"].exists() and out["report"].exists()
    assert (tmp_path / "out" / "report" / "summary.md").exists()
    assert out["summary"].done == 2 and out["report_data"].bugs == []
    again = demo.run(tmp_path / "out", progress=False)  # restartable: nothing to redo
    assert (again["summary"].skipped, again["summary"].done) == (2, 0)
