"""The README's examples run verbatim: its Python blocks, and its `energyopt` command lines.

Python blocks run in order in one fresh interpreter from the repository root (what a
reader pastes after cloning). Command lines (lines of ``` blocks that start with
``energyopt``) run in a temporary directory, so ``out/`` lands there.
"""

from __future__ import annotations

import itertools
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
BLOCKS = re.findall(r"^```(\w*)\n(.*?)^```", README, flags=re.M | re.S)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    env["MPLBACKEND"] = "Agg"
    return env


def test_readme_has_examples():
    assert any(lang == "python" for lang, _ in BLOCKS)
    assert COMMANDS


def test_python_examples_run_verbatim():
    code = "\n\n".join(body for lang, body in BLOCKS if lang == "python")
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=_env(), capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    # The first example prints the termination and status as the text says: `optimal`.
    assert proc.stdout.splitlines()[0].startswith("optimal optimal ")
    assert "TerminationReason" not in proc.stdout


COMMANDS = [
    line.split("#")[0].strip()
    for lang, body in BLOCKS
    if lang == ""
    for line in body.splitlines()
    if line.startswith("energyopt ")
]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    """One directory for all command lines, so `report` reads what `bench` stored."""
    path = tmp_path_factory.mktemp("readme")
    (path / "instances").symlink_to(ROOT / "instances")
    return path


@pytest.mark.parametrize("command", COMMANDS)
def test_command_examples_run_verbatim(command, workdir):
    _run_inputs(command, workdir)
    _run(command, workdir)


def _outputs(command: str) -> list[str]:
    """The files a command line writes (``--store``, ``--out``, ``-o`` values)."""
    args = shlex.split(command)
    return [b for a, b in itertools.pairwise(args) if a in ("--store", "--out", "-o")]


def _run_inputs(command: str, cwd: Path) -> None:
    """Run first the earlier command lines that write a file this one reads, when missing
    (the tests may run in any order, or on other workers)."""
    for earlier in COMMANDS[: COMMANDS.index(command)]:
        for out in _outputs(earlier):
            if out in command.split():
                if not (cwd / out).exists():
                    _run_inputs(earlier, cwd)
                    _run(earlier, cwd)


def _run(command: str, cwd: Path) -> None:
    args = shlex.split(command)
    proc = subprocess.run(
        [sys.executable, "-m", "energyopt.cli", *args[1:]], cwd=cwd, env=_env(),
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, f"{command}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
