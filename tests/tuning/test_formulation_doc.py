"""The code cites exactly the equations that formulations/tuning.md defines."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "formulations" / "tuning.md"
CODE = sorted((ROOT / "energyopt" / "tuning").glob("*.py"))
DEFINED = re.compile(r"\*\*\(Eq\. (\d+)\)\*\*")
CITED = re.compile(r"Eqs?\. (\d+(?:\s*(?:-|,|and)\s*\d+)*)")


def _numbers(text: str) -> set[int]:
    out: set[int] = set()
    for m in CITED.finditer(text):
        for part in re.split(r"\s*(?:,|and)\s*", m.group(1)):
            if "-" in part:
                lo, hi = (int(x) for x in part.split("-"))
                out |= set(range(lo, hi + 1))
            else:
                out.add(int(part))
    return out


def test_parser():
    assert _numbers("Eqs. 1-3, 5 and 7; Eq. 12") == {1, 2, 3, 5, 7, 12}


def test_code_cites_exactly_the_defined_equations():
    defined = {int(k) for k in DEFINED.findall(DOC.read_text())}
    assert defined == set(range(1, 16))
    cited = set().union(*(_numbers(p.read_text()) for p in CODE))
    assert cited == defined, f"cited only: {cited - defined}; never cited: {defined - cited}"
