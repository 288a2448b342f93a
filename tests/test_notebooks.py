"""Execute every ``notebooks/*.ipynb`` (cwd = notebooks/) and check outputs are stripped.

Each notebook must run in under :data:`NOTEBOOK_TIMEOUT_S` seconds in all (its cells
share that budget), with the package's public API and small settings.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
#: Wall-clock seconds one notebook may take, all its cells together.
NOTEBOOK_TIMEOUT_S = 120
PATHS = sorted(NOTEBOOKS.glob("*.ipynb"))
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _ids(paths: list[Path]) -> list[str]:
    return [p.stem for p in paths]


@pytest.mark.parametrize("path", PATHS, ids=_ids(PATHS))
def test_notebook_outputs_are_stripped(path: Path) -> None:
    nb = json.loads(path.read_text())
    dirty = [
        i
        for i, cell in enumerate(nb["cells"])
        if cell["cell_type"] == "code"
        and (cell.get("outputs") or cell.get("execution_count") is not None)
    ]
    assert not dirty, f"{path.name}: cells {dirty} carry outputs; strip them before committing"


@pytest.mark.parametrize("path", PATHS, ids=_ids(PATHS))
def test_notebook_runs(path: Path) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    nb = nbformat.read(path, as_version=4)
    # The kernel is this interpreter, so the notebook sees this very environment.
    client = nbclient.NotebookClient(
        nb,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOKS)}},
        timeout=NOTEBOOK_TIMEOUT_S,
        allow_errors=False,
    )
    client.kernel_manager = client.create_kernel_manager()
    client.kernel_manager.kernel_cmd = [
        sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}",
    ]  # fmt: skip
    deadline = time.monotonic() + NOTEBOOK_TIMEOUT_S
    with client.setup_kernel(cwd=str(NOTEBOOKS)):
        for index, cell in enumerate(nb.cells):
            left = deadline - time.monotonic()
            if left <= 0:
                pytest.fail(
                    f"{path.name}: over {NOTEBOOK_TIMEOUT_S} s, stopped before cell {index}"
                )
            # Per-cell timeout = what is left of the notebook's budget.
            client.timeout = max(1, int(left))
            try:
                client.execute_cell(cell, index)
            except nbclient.exceptions.CellTimeoutError:
                pytest.fail(f"{path.name}: over {NOTEBOOK_TIMEOUT_S} s in cell {index}")
            except nbclient.exceptions.CellExecutionError as exc:
                lines = _ANSI.sub("", str(exc)).strip().splitlines()
                pytest.fail(f"{path.name}, cell {index}: {lines[-1] if lines else exc}")
