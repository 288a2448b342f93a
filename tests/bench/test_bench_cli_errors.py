"""Corrupt or foreign files given to bench, report or instances verify: one line, no traceback."""

from __future__ import annotations

import sqlite3

import pytest

from energyopt.cli import main


def _run(capsys, *argv):
    code = main(list(argv))
    err = capsys.readouterr().err.strip()
    return code, err


@pytest.fixture
def foreign(tmp_path):
    corrupt = tmp_path / "corrupt.json"
    corrupt.write_text('{"family": "pipeline", "version": 1, "num_st')
    binary = tmp_path / "image.png"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    other_db = tmp_path / "other.sqlite"
    db = sqlite3.connect(other_db)
    db.execute("CREATE TABLE t (x)")
    db.commit()
    db.close()
    wrong_family = tmp_path / "wrong.json"
    wrong_family.write_text('{"family": "knapsack", "version": 1}')
    return {"corrupt": corrupt, "binary": binary, "other_db": other_db, "wrong": wrong_family}


def test_bench_bad_instance_files(capsys, foreign, tmp_path):
    for key in ("corrupt", "binary", "wrong"):
        code, err = _run(capsys, "bench", str(foreign[key]), "--store", str(tmp_path / "s.db"))
        assert code == 2
        assert len(err.splitlines()) == 1 and str(foreign[key]) in err, err


def test_bench_and_report_foreign_stores(capsys, foreign, tmp_path, instance_files):
    for key in ("binary", "other_db", "corrupt"):
        code, err = _run(
            capsys, "bench", str(instance_files[0]), "--store", str(foreign[key]), "--no-progress"
        )
        assert code == 2 and len(err.splitlines()) == 1, err
        assert "not an energyopt results store" in err
        code, err = _run(capsys, "report", str(foreign[key]), "--out", str(tmp_path / "o"))
        assert code == 2 and len(err.splitlines()) == 1, err
        assert "not an energyopt results store" in err
    code, err = _run(capsys, "report", str(tmp_path / "missing.sqlite"), "--out", str(tmp_path))
    assert code == 2 and "no such results store" in err
    code, err = _run(capsys, "report", str(tmp_path), "--out", str(tmp_path / "o"))
    assert code == 2 and len(err.splitlines()) == 1 and "directory" in err


def test_instances_verify_corrupt_library(capsys, foreign, tmp_path):
    root = tmp_path / "lib"
    (root / "pipeline" / "smoke").mkdir(parents=True)
    (root / "pipeline" / "smoke" / "000-x.json").write_bytes(foreign["binary"].read_bytes())
    (root / "index.csv").write_text("not,an,index\n")
    code = main(["instances", "verify", "--root", str(root), "--family", "pipeline"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code in (1, 2)
    assert any("000-x.json" in line for line in err)
    assert any("index.csv" in line and "header" in line for line in err)
    assert not any("Traceback" in line for line in err)
