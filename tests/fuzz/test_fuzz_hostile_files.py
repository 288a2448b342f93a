"""Hostile files through every reader of user files and through the command line.

Devices (``/dev/zero`` reports 0 bytes and never ends), FIFOs (opening one blocks),
folders, headers of thousands of columns, one enormous line, more rows than the cap
(written cheaply: one short row repeated), NUL bytes, invalid UTF-8, deep JSON, huge
numbers and truncated rows. Each must be refused with one line naming the file, and
cheaply: the CPU time of each refusal is measured (never the wall clock, which a busy
machine stretches) and must stay within a few seconds.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from fuzzutil import check_message

from energyopt.cli import main
from energyopt.core.errors import InstanceError
from energyopt.core.files import MAX_COLUMNS, MAX_HEADER_BYTES
from energyopt.core.instance import load_instance
from energyopt.pipeline.from_profile import read_any_profile
from energyopt.pipeline.readers import read_perseus_profile, read_perseus_stage_profile
from energyopt.profiles import read_zeus_monitor_log
from energyopt.profiles.readers import MAX_ROWS, read_zeus_power_trace
from energyopt.profiles.schema import MAX_PROFILE_ROWS, read_profile
from energyopt.tuning.trace import read_power_trace, read_train_trace

ROOT = Path(__file__).resolve().parents[2]
POWERCAP = ROOT / "instances/powercap/smoke/000-random-event-j3-g8x4-eta0-5-seed1.json"

#: CPU seconds one refusal may take (a few seconds, far above what it needs).
CPU_BUDGET_S = 5.0

SCHEMA_HEADER = "gpu,knob,knob_value,workload,operation,batch_size,time_s,energy_j,samples,source"
SCHEMA_ROW = "A100,sm_clock_mhz,1410,w,forward,0,0.1,10,1,nvml"
POWER_HEADER = "dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power"
POWER_ROW = "cifar100,shufflenetv2,1024,adadelta,100,10.0,90.0"
TRAIN_HEADER = "dataset,network,batch_size,optimizer,learning_rate,run,target_metric,target_epoch"

READERS: dict[str, Callable[[Path], object]] = {
    "instance": load_instance,
    "schema profile": read_profile,
    "any profile": read_any_profile,
    "perseus stage profile": read_perseus_stage_profile,
    "perseus profile": read_perseus_profile,
    "zeus power trace (profiles)": read_zeus_power_trace,
    "zeus monitor log": lambda p: read_zeus_monitor_log(p, gpu="A40", knob_value=1410),
    "zeus power trace (tuning)": read_power_trace,
    "zeus train trace": read_train_trace,
}


def cpu_s(children: bool = False) -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def hostile_files(folder: Path) -> dict[str, Path]:
    """Label -> a hostile file (or special file) under ``folder``."""
    out: dict[str, Path] = {}

    def write(name: str, data: bytes | str) -> Path:
        p = folder / name
        p.write_bytes(data if isinstance(data, bytes) else data.encode())
        return p

    if Path("/dev/zero").exists():
        out["device /dev/zero"] = Path("/dev/zero")
    fifo = folder / "fifo.csv"
    os.mkfifo(fifo)
    out["FIFO"] = fifo
    out["folder"] = folder / "dir.csv"
    out["folder"].mkdir()
    out["empty"] = write("empty.csv", b"")
    wide = ",".join(f"c{i}" for i in range(MAX_COLUMNS + 1))
    out["wide header"] = write("wide.csv", wide + "\n" + ",".join("1" * (MAX_COLUMNS + 1)) + "\n")
    out["one huge line"] = write("oneline.csv", "a" * (4 * MAX_HEADER_BYTES))
    out["duplicate column"] = write("dup.csv", "a,b,a\n1,2,3\n")
    out["NUL bytes"] = write("nul.csv", SCHEMA_HEADER.encode() + b"\n\0\0\0\n")
    out["invalid UTF-8"] = write("latin.csv", SCHEMA_HEADER.encode() + b"\n\xff\xfe\n")
    rows = max(MAX_ROWS, MAX_PROFILE_ROWS) + 1
    out["too many rows"] = write("rows.csv", SCHEMA_HEADER + "\n" + (SCHEMA_ROW + "\n") * rows)
    out["power trace, too many rows"] = write(
        "summary_power_rows.csv", POWER_HEADER + "\n" + (POWER_ROW + "\n") * (MAX_ROWS + 1)
    )
    out["truncated row"] = write(
        "trunc.csv", TRAIN_HEADER + "\ncifar100,shufflenetv2,1024,adadelta,0.1,1,0.6\n"
    )
    out["deep JSON"] = write("deep.json", "[" * 100_000 + "]" * 100_000)
    doc = json.loads(POWERCAP.read_text())
    huge = json.dumps({**doc, "num_gpus": 0}).replace('"num_gpus": 0', '"num_gpus": 1' + "0" * 400)
    out["huge number"] = write("huge.json", huge)
    return out


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    """The hostile files, written once for the module (the row-count ones are ~10 MB)."""
    return hostile_files(tmp_path_factory.mktemp("hostile"))


def test_every_reader_refuses_every_hostile_file(files):
    for label, path in files.items():
        for name, read in READERS.items():
            what = f"{name} on {label}"
            before = cpu_s()
            with pytest.raises(InstanceError) as err:
                read(path)
            spent = cpu_s() - before
            check_message(str(err.value), str(path), {"line", "num_gpus"}, what)
            assert spent < CPU_BUDGET_S, f"{what}: {spent:.2f} s of CPU to refuse"


def test_the_repro_400_digit_clock_and_eta_are_refused(tmp_path):
    doc = json.loads(POWERCAP.read_text())
    for field, value in (("eta", 2.0), ("eta", 1.0000001)):
        path = tmp_path / "eta.json"
        path.write_text(json.dumps({**doc, field: value}))
        with pytest.raises(InstanceError, match=r"eta = .*must lie in \(0, 1\]"):
            load_instance(path)
    doc["jobs"][0]["options"][0][1] = int("9" * 400)
    path = tmp_path / "clock.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InstanceError, match=r"sm_clock_mhz\) = 9+\.\.\.: is too large"):
        load_instance(path)


def run_cli(capsys, *argv: str) -> tuple[int, str]:
    try:
        rc = main(list(argv))
    except SystemExit as exc:
        rc = exc.code
    return rc, capsys.readouterr().err


@pytest.mark.parametrize(
    "label", ["device /dev/zero", "FIFO", "folder", "deep JSON", "huge number", "NUL bytes"]
)
def test_solve_refuses_with_one_line(label, files, capsys):
    if label not in files:
        pytest.skip(f"no {label} here")
    before = cpu_s()
    rc, err = run_cli(capsys, "solve", str(files[label]), "-m", "greedy")
    assert cpu_s() - before < CPU_BUDGET_S
    assert rc == 2 and "Traceback" not in err, err[-500:]
    assert len(err.strip().splitlines()) == 1 and str(files[label]) in err, err


@pytest.mark.parametrize("label", ["wide header", "one huge line", "too many rows", "FIFO"])
def test_from_profile_refuses_with_one_line(label, files, tmp_path, capsys):
    out = tmp_path / "out.json"
    before = cpu_s()
    rc, err = run_cli(
        capsys, "instances", "from-profile", str(files[label]), "--microbatches", "4",
        "--p-blocking", "80", "-o", str(out),
    )  # fmt: skip
    assert cpu_s() - before < CPU_BUDGET_S
    assert rc == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists()  # nothing written, not even an empty file


def test_report_on_a_fifo_store_does_not_block(tmp_path, capsys):
    fifo = tmp_path / "store.sqlite"
    os.mkfifo(fifo)
    rc, err = run_cli(capsys, "report", str(fifo))
    assert rc == 2 and "not a regular file" in err and len(err.strip().splitlines()) == 1


def test_the_installed_command_on_a_fifo_and_dev_zero(tmp_path):
    """The real interpreter: a FIFO and /dev/zero end at once with status 2 (no hang)."""
    fifo = tmp_path / "x.json"
    os.mkfifo(fifo)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    targets = [fifo] + ([Path("/dev/zero")] if Path("/dev/zero").exists() else [])
    for target in targets:
        before = cpu_s(children=True)
        proc = subprocess.run(
            [sys.executable, "-m", "energyopt.cli", "solve", str(target), "-m", "greedy"],
            capture_output=True, text=True, env=env, timeout=300,
        )  # fmt: skip
        assert cpu_s(children=True) - before < 3 * CPU_BUDGET_S  # interpreter start included
        assert proc.returncode == 2, proc.stderr[-500:]
        assert len(proc.stderr.strip().splitlines()) == 1 and str(target) in proc.stderr
