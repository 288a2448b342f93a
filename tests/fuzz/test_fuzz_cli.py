"""The command line on hostile input: one line on stderr, exit status 2, no traceback.

Most checks call the CLI's ``main()`` in this process (it catches errors exactly as the
installed ``energyopt`` does) on a sample of the generated variants; a few run the real
``python -m energyopt.cli`` in a subprocess, so that the interpreter's own exit path is
covered too. The results store variants (corrupt pages, truncation, rows of the wrong
shape) go through ``report``.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from fuzzutil import SMOKE_FILES, csv_text, mutate_csv, mutate_document, mutate_text, to_text

from energyopt.cli import main
from energyopt.core.errors import InstanceError
from energyopt.core.instance import load_instance

ROOT = Path(__file__).resolve().parents[2]
FILES = SMOKE_FILES
PER_FAMILY = 8


def run_main(capsys, *argv: str) -> tuple[int, str]:
    """``energyopt ARGV`` in this process: (exit status, stderr)."""
    try:
        rc = main(list(argv))
    except SystemExit as exc:  # argparse's own usage errors
        rc = exc.code
    return rc, capsys.readouterr().err


def assert_one_line_error(rc: int, err: str, label: str) -> None:
    assert rc == 2, f"{label}: exit status {rc}; stderr {err[-500:]!r}"
    assert "Traceback" not in err, f"{label}: traceback\n{err}"
    lines = err.strip().splitlines()
    assert len(lines) == 1, f"{label}: {len(lines)} lines on stderr: {err[-500:]!r}"


@pytest.mark.parametrize("family", sorted(FILES))
def test_solve_on_instance_variants(family, tmp_path, capsys):
    rel, method = FILES[family]
    doc = json.loads((ROOT / rel).read_text())
    rng = random.Random(f"cli-{family}")
    path = tmp_path / "variant.json"
    for k in range(PER_FAMILY):
        if k % 4 == 3:
            label, text = mutate_text(to_text(doc), rng)
        else:
            label, mutated, _ = mutate_document(doc, rng)
            text = to_text(mutated)
        path.write_bytes(text.encode("utf-8", "surrogateescape"))
        try:
            load_instance(path)
        except InstanceError:
            refused = True
        else:
            refused = False
        rc, err = run_main(capsys, "solve", str(path), "-m", method, "--time-limit", "5")
        label = f"{family}: {label}"
        if refused:
            assert_one_line_error(rc, err, label)
        else:
            assert rc == 0 and "Traceback" not in err, f"{label}: exit {rc}: {err[-500:]}"


def test_profile_import_on_csv_variants(tmp_path, capsys):
    from test_fuzz_csv import PERSEUS_HEADER, PERSEUS_INVALID, perseus_rows

    rng = random.Random("cli-perseus")
    path = tmp_path / "model+a100_sxm_bf16.csv"
    for _ in range(8):
        label, text, must_refuse = mutate_csv(PERSEUS_HEADER, perseus_rows(), PERSEUS_INVALID, rng)
        path.write_bytes(text.encode("utf-8", "surrogateescape"))
        rc, err = run_main(capsys, "profile", "--import", "perseus", "--input", str(path))
        if must_refuse or rc != 0:
            assert_one_line_error(rc, err, f"profile --import: {label}")


# -- output paths --------------------------------------------------------------------------


def test_output_paths_under_a_file_or_unwritable(tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("x")
    perseus = tmp_path / "p.csv"
    from test_fuzz_csv import PERSEUS_HEADER, perseus_rows

    perseus.write_text(csv_text(PERSEUS_HEADER, perseus_rows()))
    inst = ROOT / FILES["pipeline"][0]
    cases = [
        ("profile", "--device", "simulated:a100", "--quiet", "-o", f"{afile}/x.csv"),
        ("profile", "--device", "simulated:a100", "--quiet", "-o", str(tmp_path)),
        ("profile", "--import", "perseus", "--input", str(perseus), "-o", "/proc/no/x.csv"),
        ("bench", str(inst), "-m", "envpipe", "--store", f"{afile}/sub.sqlite"),
        ("report", str(afile), "--out", str(tmp_path / "r")),
    ]
    for argv in cases:
        rc, err = run_main(capsys, *argv)
        assert_one_line_error(rc, err, " ".join(argv))
        assert str(afile) in err or str(tmp_path) in err or "/proc" in err, err


def test_a_path_that_looks_like_json_is_a_path(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc, err = run_main(capsys, "solve", "{weird}.json", "-m", "envpipe")
    assert_one_line_error(rc, err, "missing {weird}.json")
    assert "{weird}.json: cannot read" in err
    shutil.copy(ROOT / FILES["pipeline"][0], tmp_path / "{weird}.json")
    rc, err = run_main(capsys, "solve", "{weird}.json", "-m", "envpipe")
    assert rc == 0, err


# -- results stores ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """A small real store: two instances, two quick methods."""
    where = tmp_path_factory.mktemp("store")
    path = where / "r.sqlite"
    inst = ROOT / FILES["pipeline"][0]
    argv = ["bench", str(inst), "-m", "envpipe", "-m", "bruteforce", "--store", str(path)]
    rc = main([*argv, "--time-limit", "20", "--no-progress"])
    assert rc == 0
    return path


def _corrupt_page(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[4096 : 4096 * 2] = b"\xff" * 4096
    path.write_bytes(bytes(data))


def _sql(statement: str):
    def edit(path: Path) -> None:
        db = sqlite3.connect(path)
        db.execute(statement)
        db.commit()
        db.close()

    return edit


STORE_MUTATIONS = {
    "truncated": lambda p: p.write_bytes(p.read_bytes()[:1500]),
    "text file": lambda p: p.write_text("not a database\n" * 10),
    "empty": lambda p: p.write_bytes(b""),
    "corrupt page": _corrupt_page,
    "other application": lambda p: (p.unlink(), _sql("CREATE TABLE t (x)")(p)),
    "result_json is an array": _sql("UPDATE cells SET result_json = '[1, 2]'"),
    "objective as text": _sql("UPDATE cells SET objective = 'much'"),
    "instance name with mathtext": _sql(r"UPDATE cells SET instance_name = 'run $\alpha_{1$ cost'"),
}


@pytest.mark.parametrize("mutation", sorted(STORE_MUTATIONS))
def test_report_on_store_variants(mutation, store, tmp_path, capsys):
    path = tmp_path / "r.sqlite"
    shutil.copy(store, path)
    for suffix in ("-wal", "-shm"):
        if Path(str(store) + suffix).exists():
            shutil.copy(Path(str(store) + suffix), Path(str(path) + suffix))
    STORE_MUTATIONS[mutation](path)
    rc, err = run_main(capsys, "report", str(path), "--out", str(tmp_path / "out"), "--no-plots")
    assert "Traceback" not in err, f"{mutation}: traceback\n{err}"
    if rc == 2:
        assert_one_line_error(rc, err, mutation)
        assert str(path) in err, f"{mutation}: the error does not name the store: {err}"
    else:
        assert rc in (0, 1), f"{mutation}: exit status {rc}: {err[-500:]}"


# -- the real command line, in a subprocess ----------------------------------------------------


def test_installed_command_line_exits_2_in_one_line(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text('{"family": "pipeline", "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    listed = tmp_path / "listed.json"
    listed.write_text('{"family": ["pipeline"]}')
    huge = tmp_path / "huge.json"
    doc = json.loads((ROOT / FILES["tuning"][0]).read_text())
    doc["recurrences"] = 10**400
    huge.write_text(json.dumps(doc))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for argv in (
        ["solve", str(deep), "-m", "envpipe"],
        ["solve", str(listed), "-m", "envpipe"],
        ["solve", str(huge), "-m", "default"],
    ):
        run = subprocess.run(
            [sys.executable, "-m", "energyopt.cli", *argv],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert_one_line_error(run.returncode, run.stderr, " ".join(argv))
