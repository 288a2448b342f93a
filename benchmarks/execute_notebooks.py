"""Execute ``notebooks/*.ipynb`` and write copies with their outputs to ``docs/notebooks/``.

``make docs`` runs this. Each notebook runs from ``notebooks/`` (as in the tests) with
this interpreter as its kernel; the sources under ``notebooks/`` stay output-free.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def execute(path: Path, out_dir: Path, timeout_s: int) -> Path:
    """Run one notebook and write the executed copy; returns its path."""
    import nbclient
    import nbformat

    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb, kernel_name="python3", timeout=timeout_s,
        resources={"metadata": {"path": str(path.parent)}},
    )  # fmt: skip
    client.kernel_manager = client.create_kernel_manager()
    client.kernel_manager.kernel_cmd = [
        sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}",
    ]  # fmt: skip
    client.execute(cwd=str(path.parent))
    out = out_dir / path.name
    nbformat.write(nb, out)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("notebooks", nargs="*", type=Path,
                    default=sorted((ROOT / "notebooks").glob("*.ipynb")))  # fmt: skip
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "notebooks")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for nb in args.notebooks:
        print(f"executed {nb.name} -> {execute(nb.resolve(), args.out, args.timeout)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
