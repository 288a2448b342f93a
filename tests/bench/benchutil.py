"""Fixtures of the bench tests: a few tiny PEM instances written as files."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from energyopt.pipeline import random_dag_instance

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PLUGIN = "bench_plugin_methods"


def tiny_instances(count: int = 3) -> list:
    """Random 5-computation DAGs: every exact method (brute force included) solves them
    in milliseconds."""
    return [random_dag_instance(5, 3, seed=s) for s in range(count)]


@pytest.fixture
def instance_files(tmp_path: Path) -> list[Path]:
    paths = []
    for k, inst in enumerate(tiny_instances()):
        p = tmp_path / f"tiny{k}.json"
        inst.to_json(p)
        paths.append(p)
    return paths


def cli(*args: str, env: dict | None = None, **kw) -> subprocess.CompletedProcess:
    """``energyopt ARGS`` in a fresh interpreter that can import the test plugin."""
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = os.pathsep.join([str(HERE), str(ROOT), full_env.get("PYTHONPATH", "")])
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "energyopt.cli", *args],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=ROOT,
        **kw,
    )


def fake_record(cell, objective, bound, status="feasible", termination="completed"):
    """A stored result written by hand, to test the report's arithmetic and checks."""
    from energyopt.bench.cells import CellRecord

    return CellRecord(
        key=cell.key,
        outcome="finished",
        message="",
        wall_s=0.1,
        result={
            "family": cell.family,
            "instance_id": cell.instance_id,
            "method": cell.method,
            "termination": termination,
            "status": status,
            "objective": objective,
            "bound": bound,
            "runtime_s": 0.05,
            "solver": "python",
            "solver_version": "",
            "seed": 0,
            "frontier": [],
            "message": "",
        },
    )
