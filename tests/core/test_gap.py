import math

import pytest

from energyopt.core.gap import gap


def test_gap_definition():
    # (110 - 100) / max(110, 100) = 10 / 110
    assert gap(110.0, 100.0) == pytest.approx(10 / 110)
    assert gap(100.0, 100.0) == 0.0
    assert gap(100.0 + 1e-12, 100.0) == 0.0


def test_gap_missing_or_non_finite():
    assert gap(None, 1.0) is None
    assert gap(1.0, None) is None
    assert gap(math.inf, 1.0) is None
    assert gap(math.nan, 1.0) is None


def test_gap_negative_values_and_value_below_bound():
    # Effective energies may be negative: scale by the larger magnitude.
    assert gap(-90.0, -100.0) == pytest.approx(10 / 100)
    # A value below a proven bound gives a negative gap (a bug the callers check for).
    assert gap(90.0, 100.0) < 0
