"""Rerun the commands behind the figures quoted in the docs and fail when they drift.

A figure block in a Markdown file is tagged with the command that produced it::

    <!-- docs-check: python benchmarks/powercap_fig7.py --out {tmp} -->
    | policy | mean JCT (s) | ... | 14850 / 7156 | ...
    <!-- /docs-check -->

The checker runs each command from the repository root (``{tmp}`` becomes a fresh
temporary directory; ``python`` the running interpreter), collects every number it
printed, and checks every number quoted in the block: a quoted number ``x`` written with
``d`` decimals matches a printed number ``y`` when ``|s * y - x| <= 0.5 * 10**-d`` for one
of the unit scales ``s`` in :data:`SCALES` (so ``158.0`` MJ matches ``1.57989e+08`` J and
``15.4`` % matches ``0.154``). Numbers in the block that the command did not print are
drift. A match is one-sided (each quoted number must be printed somewhere), which is
what "every figure in the docs comes from the command named beside it" asks.

Usage: ``python benchmarks/docs_check.py [docs/*.md]`` (``make docs-check``); exit
status 1 on drift, with one line per stale figure.
"""

from __future__ import annotations

import argparse
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"<!--\s*docs-check:\s*(.+?)\s*-->\n(.*?)<!--\s*/docs-check\s*-->", re.S)
NUMBER = re.compile(r"(?<![\w.])(?<![A-Za-z]-)-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
#: Unit changes a doc may make: J -> kJ/MJ/GJ, fraction -> percent, s -> h.
SCALES = (1.0, 1e-3, 1e-6, 1e-9, 100.0, 1 / 3600)


@dataclass(frozen=True)
class Block:
    """One tagged figure block: its file, line, command and quoted text."""

    path: Path
    line: int
    command: str
    text: str


def blocks(path: Path) -> list[Block]:
    """The tagged blocks of a Markdown file."""
    source = path.read_text()
    return [
        Block(path, source.count("\n", 0, m.start()) + 1, m.group(1), m.group(2))
        for m in BLOCK.finditer(source)
    ]


def quoted_numbers(text: str) -> list[str]:
    """The numbers a block quotes, as written (table rules and list markers ignored)."""
    return NUMBER.findall(text)


def matches(quoted: str, printed: list[float]) -> bool:
    """Whether a quoted number equals one printed number at the quoted precision."""
    x = float(quoted)
    mantissa = quoted.lower().split("e")[0]
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    exponent = int(quoted.lower().split("e")[1]) if "e" in quoted.lower() else 0
    half = 0.5 * 10.0 ** (exponent - decimals) * (1 + 1e-9)
    return any(abs(s * y - x) <= half for y in printed for s in SCALES)


def stale(block: Block, output: str) -> list[str]:
    """One line per number of ``block`` that ``output`` does not contain."""
    printed = [float(v) for v in NUMBER.findall(output)]
    where = f"{block.path}:{block.line}"
    return [
        f"{where}: {q} is not printed by `{block.command}`"
        for q in quoted_numbers(block.text)
        if not matches(q, printed)
    ]


def run(block: Block, timeout_s: float) -> str:
    """The command's stdout (plus its text files written under ``{tmp}``)."""
    with tempfile.TemporaryDirectory() as tmp:
        args = [sys.executable if a == "python" else a for a in shlex.split(block.command)]
        args = [a.replace("{tmp}", tmp) for a in args]
        proc = subprocess.run(
            args, cwd=ROOT, capture_output=True, text=True, timeout=timeout_s, check=False
        )
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or [""])[-1]
            raise RuntimeError(
                f"{block.path}:{block.line}: `{block.command}` exited {proc.returncode}: {last}"
            )
        files = [p.read_text() for p in Path(tmp).rglob("*") if p.suffix in {".csv", ".txt"}]
        return "\n".join([proc.stdout, *files])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", type=Path, default=sorted((ROOT / "docs").glob("*.md")))
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per command")
    args = ap.parse_args(argv)
    problems, checked = [], 0
    outputs: dict[str, str] = {}  # one run per distinct command
    for path in args.files:
        for block in blocks(path):
            try:
                if block.command not in outputs:
                    outputs[block.command] = run(block, args.timeout)
                problems += stale(block, outputs[block.command])
            except (RuntimeError, subprocess.TimeoutExpired) as exc:
                problems.append(str(exc))
            checked += 1
    for line in problems:
        print(line, file=sys.stderr)
    print(f"docs-check: {checked} figure block(s), {len(problems)} stale figure(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
