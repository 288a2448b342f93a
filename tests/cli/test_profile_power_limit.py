"""``energyopt profile power-limit``: Zeus's selectors from the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from energyopt.cli import main

LOG = (
    "start_time,window_name,elapsed_time,gpu0_energy\n"
    "0,__GlobalPowerLimitOptimizer_300,10,3000\n"
    "1,__GlobalPowerLimitOptimizer_200,11,2000\n"
)


def test_text_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "log.csv"
    path.write_text(LOG)
    assert main(["profile", "power-limit", str(path), "--selector", "energy"]) == 0
    assert capsys.readouterr().out == "energy: 200 W\n"
    assert main(["profile", "power-limit", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    # default zeus-cost:0.5, max_power 300 W: 300 W costs 1500 + 1500 = 3000,
    # 200 W costs 1000 + 1650 = 2650
    assert out["choices"] == {"zeus-cost:0.5": 200} and out["num_gpus"] == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--selector", "zeus-cost:2"], "ETA must lie in [0, 1]"),
        (["--selector", "max-slowdown:0.5"], "FACTOR must be >= 1"),
    ],
)
def test_errors_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    path = tmp_path / "log.csv"
    path.write_text(LOG)
    assert main(["profile", "power-limit", str(path), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_bad_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "log.csv"
    path.write_text(LOG.replace(",11,", ",eleven,"))
    assert main(["profile", "power-limit", str(path)]) == 2
    err = capsys.readouterr().err
    assert "log.csv, line 3: elapsed_time = 'eleven'" in err and err.count("\n") == 1


def test_import_zeus_monitor(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "H100+llm+gpu0.csv"
    path.write_text(LOG)
    out = tmp_path / "p.csv"
    argv = ["profile", "--import", "zeus-monitor", "--input", str(path), "--out", str(out), "-q"]
    assert main(argv) == 0
    text = out.read_text().splitlines()
    assert text[0].startswith("gpu,knob,knob_value") and len(text) == 3
    assert text[1].startswith("H100,power_limit_w,300.0,llm,power-limit-window")
