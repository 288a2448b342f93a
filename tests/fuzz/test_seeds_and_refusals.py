"""Seeds follow one rule in every family; refusals stay short (issue 27)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fuzzutil import SMOKE_FILES

import energyopt
from energyopt.cli import main
from energyopt.core.status import TerminationReason
from energyopt.pipeline import synthetic_instance

ROOT = Path(__file__).resolve().parents[2]
FILES = SMOKE_FILES


@pytest.mark.parametrize("family", sorted(FILES))
def test_a_negative_seed_is_refused_in_every_family(family, capsys):
    rel, method = FILES[family]
    with pytest.raises(SystemExit) as exc:
        main(["solve", str(ROOT / rel), "-m", method, "--seed", "-5"])
    assert exc.value.code == 2
    assert "seed = -5: must be >= 0" in capsys.readouterr().err
    with pytest.raises(ValueError, match="seed = -5: must be >= 0"):
        energyopt.solve(energyopt.load_instance(ROOT / rel), method, seed=-5)
    assert energyopt.solve(energyopt.load_instance(ROOT / rel), method, seed=5).has_solution


def test_bench_seeds_are_checked_by_the_parser(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["bench", "--suite", "smoke", "--seeds", "0", "-1"])
    assert exc.value.code == 2 and "seed = -1" in capsys.readouterr().err


def test_bruteforce_refusal_prints_a_power_of_ten_not_the_count():
    # 10 options on each of 4 x 8 x 2 = 64 computations: 10^64 plans.
    r = energyopt.solve(synthetic_instance(4, 8, 10, seed=1), "bruteforce")
    assert r.termination is TerminationReason.ERROR
    assert "10^64 combinations" in r.message and len(r.message) < 200, r.message
