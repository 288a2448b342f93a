"""The strict field readers every family's ``from_dict`` goes through."""

from __future__ import annotations

import pytest

from energyopt.core import validate as V
from energyopt.core.instance import InstanceError


@pytest.mark.parametrize(
    ("value", "match"),
    [
        (True, "must be a number, not a boolean"),
        ("1", "must be a number, not a string"),
        (float("nan"), "must be finite"),
        (float("inf"), "must be finite"),
        (10**400, "is too large"),
        (V.MAX_MAGNITUDE * 1.01, "is too large"),
        (-V.MAX_MAGNITUDE * 1.01, "is too large"),
    ],
)
def test_number_rejects(value, match):
    with pytest.raises(InstanceError, match=match):
        V.number("x", value)


def test_number_accepts_the_edges():
    assert V.number("x", V.MAX_MAGNITUDE) == V.MAX_MAGNITUDE
    assert V.number("x", -V.MAX_MAGNITUDE) == -V.MAX_MAGNITUDE
    assert V.number("x", 5e-324) == 5e-324
    assert V.number("x", float("inf"), allow_inf=True) == float("inf")


@pytest.mark.parametrize(("value", "match"), [(2.5, "must be an integer"), (False, "boolean")])
def test_integer_rejects(value, match):
    with pytest.raises(InstanceError, match=match):
        V.integer("n", value)
