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


def test_integers_are_bounded_even_without_a_maximum():
    # A 400-digit option clock (../shared/repro/powercap-400digit-clock.json) was accepted.
    assert V.integer("clock", 10**15, maximum=None) == 10**15
    for value in (10**15 + 1, int("9" * 400), -(10**16)):
        with pytest.raises(InstanceError, match="is too large"):
            V.integer("clock", value, maximum=None)


def test_count_text_is_short_for_huge_counts():
    assert V.count_text(1234) == "1,234"
    assert V.count_text(10**40) == "10^40"
    assert V.count_text(10**40 + 1) == "more than 10^40"
    assert V.count_text(10**40 - 1) == "more than 10^39"
    assert V.count_text(3**3000) == "more than 10^1431"  # 3^3000 = 1.3e1431


@pytest.mark.parametrize(
    ("value", "match"),
    [(-5, "must be >= 0"), (True, "not a boolean"), (2.5, "not a number"),
     ("3", "not a string"), (2**31, "must be <= 2147483647")],
)  # fmt: skip
def test_seed_is_one_rule(value, match):
    with pytest.raises(InstanceError, match=match):
        V.seed(value)


def test_seed_accepts_none_and_the_range():
    assert V.seed(None) is None and V.seed(0) == 0 and V.seed(2**31 - 1) == 2**31 - 1
