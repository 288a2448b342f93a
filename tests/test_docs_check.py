"""The checker behind `make docs-check`: figures quoted in docs against their command."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("docs_check", ROOT / "benchmarks/docs_check.py")
docs_check = importlib.util.module_from_spec(_spec)
sys.modules["docs_check"] = docs_check  # dataclasses look their module up
_spec.loader.exec_module(docs_check)

DOC = """# A page

<!-- docs-check: python -c "print('energy_j', 157989273.1, 'ratio', 0.1541, 'jct', 14850.34)" -->
| energy (MJ) | saving | JCT (s) |
|---|---|---|
| 158.0 | 15.4 % | 14850 |
<!-- /docs-check -->

Untagged text with 99.9 is not checked.
"""


def test_matches_at_the_quoted_precision_and_units():
    printed = [157989273.1, 0.1541, 14850.34]
    assert docs_check.matches("158.0", printed)  # J -> MJ, one decimal
    assert docs_check.matches("15.4", printed)  # fraction -> percent
    assert docs_check.matches("14850", printed)
    assert not docs_check.matches("157.8", printed)
    assert not docs_check.matches("14851", printed)
    assert not docs_check.matches("15.5", printed)


def test_fresh_figures_pass_and_stale_ones_are_named(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(DOC)
    assert docs_check.main([str(page)]) == 0
    page.write_text(DOC.replace("14850 |", "15764 |"))
    (block,) = docs_check.blocks(page)
    lines = docs_check.stale(block, docs_check.run(block, 60))
    assert lines == [f"{page}:3: 15764 is not printed by `{block.command}`"]
    assert docs_check.main([str(page)]) == 1


def test_a_failing_command_is_reported(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- docs-check: python -c 'raise SystemExit(3)' -->\n| 1 |\n<!-- /docs-check -->\n"
    )
    assert docs_check.main([str(page)]) == 1
