"""A Ctrl-C during ``bench`` start-up exits quietly with status 130 (issue 27): no
``KeyboardInterrupt`` traceback, and no cell server left behind."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from benchutil import PLUGIN, ROOT, cli


def test_interrupt_while_the_cli_imports_is_one_line():
    """The command's modules are importing (before ``main`` can catch anything)."""
    run = subprocess.run(
        [sys.executable, "-c", "import energyopt.cli\nraise KeyboardInterrupt"],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert run.stderr == "energyopt: interrupted\n"
    assert run.returncode in (130, -2)  # the interpreter still ends as interrupted


def test_interrupt_while_the_parser_is_built_returns_130(monkeypatch, capsys):
    import energyopt.cli as cli_module

    def interrupted():
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_module, "build_parser", interrupted)
    assert cli_module.main(["bench", "--help"]) == 130
    assert capsys.readouterr().err == "energyopt: interrupted\n"


def test_interrupt_while_planning_stops_the_cell_server(instance_files, tmp_path):
    """Planning runs once the cell server has started: Ctrl-C there ends both, quietly."""
    # A short temporary folder, so that the server's socket is made in it (under a long
    # one, such as pytest-xdist's tmp_path, it goes to /tmp: test_long_tmpdir_...).
    sockets = Path(tempfile.mkdtemp(prefix="intr-", dir="/tmp"))
    run = cli(
        "bench", str(instance_files[0]), "-m", "bruteforce", "--plugin", PLUGIN,
        "--store", str(tmp_path / "r.sqlite"), "--no-progress",
        env={"BENCH_TEST_INTERRUPT_PLANNING": "1", "TMPDIR": str(sockets)}, timeout=300,
    )  # fmt: skip
    leftover = list(sockets.glob("energyopt-cells-*"))
    if not leftover:
        sockets.rmdir()
    assert run.returncode == 130
    assert run.stderr.strip() == "energyopt bench: interrupted", run.stderr[-3000:]
    assert "Traceback" not in run.stdout + run.stderr
    # The server's socket folder is removed when the server is stopped.
    assert not leftover


def test_long_tmpdir_still_gives_the_server_a_socket(tmp_path, monkeypatch):
    """A socket path holds at most 107 bytes: under a deeper TMPDIR the server failed with
    "AF_UNIX path too long" (and a traceback); its folder then goes to /tmp."""
    from energyopt.bench.cellclient import _SUN_PATH_MAX, _socket_dir

    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    path = Path(_socket_dir())
    try:
        assert path.is_dir() and path.parent == Path("/tmp")
        assert len(os.fsencode(path / "server.sock")) <= _SUN_PATH_MAX
        assert list(deep.iterdir()) == []  # the too-deep folder was not left behind
    finally:
        path.rmdir()
