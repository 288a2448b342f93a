"""Strict readers for fields of instance data read from JSON, CSV or the command line.

Every family's ``from_dict`` reads its fields through these functions, so that one
set of rules holds everywhere:

- a bool is never a number (JSON ``true`` is not ``1``);
- an integer field takes an ``int``, or a ``float`` that is integral (``2.0``), never
  ``2.5`` and never the string ``"2"``; like a number, it is at most ``MAX_MAGNITUDE``
  in absolute value even where the field sets no maximum (a 400-digit clock);
- a number field takes an ``int`` or a ``float``; it must be finite unless the caller
  allows infinity, and a huge integer (``10**400``) is an error, not an OverflowError;
- a finite number is at most ``MAX_MAGNITUDE`` in absolute value, so that products
  of a few fields (energy = power x time x epochs) and their squares stay floats;
- sizes are bounded, so that absurd sizes are refused before any work starts.

Each failure raises :class:`~energyopt.core.instance.InstanceError` whose message names
the field and the value (the value is shortened to keep messages on one line).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Sequence
from typing import Any

from energyopt.core.errors import InstanceError

#: Upper bound on any count read from data (stages, microbatches, jobs, recurrences ...).
MAX_COUNT = 10_000_000

#: Largest absolute value of a finite number read from data. No measured time (s),
#: power (W), energy (J), count of epochs or price comes near it, and products of a few
#: such fields, and their squares, stay far from overflowing a float.
MAX_MAGNITUDE = 1e15

#: Longest message fragment used to show a rejected value.
_SHOWN = 60


def shown(value: Any) -> str:
    """``repr(value)`` cut to a readable length for a one-line message."""
    try:
        text = repr(value)
    except Exception:  # a repr that fails must not hide the real error
        text = f"<{type(value).__name__}>"
    text = text.replace("\n", " ")
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def fail(field: str, value: Any, why: str) -> InstanceError:
    """The error for ``field = value``: ``why``."""
    return InstanceError(f"{field} = {shown(value)}: {why}")


def integer(
    field: str, value: Any, *, minimum: int | None = None, maximum: int | None = MAX_COUNT
) -> int:
    """``value`` as an ``int``: an int, or an integral finite float; bools rejected."""
    if _is_bool(value):
        raise fail(field, value, "must be an integer, not a boolean")
    if isinstance(value, numbers.Integral):  # int, or a numpy integer from a table
        result = int(value)
    elif isinstance(value, numbers.Real):
        x = float(value)
        if not math.isfinite(x) or not x.is_integer():
            raise fail(field, value, "must be an integer")
        result = int(x)
    else:
        raise fail(field, value, f"must be an integer, not {kind_of(value)}")
    if abs(result) > MAX_MAGNITUDE:  # even where no maximum is set: no datum is this big
        raise fail(field, value, f"is too large (at most {MAX_MAGNITUDE:g} in absolute value)")
    if minimum is not None and result < minimum:
        raise fail(field, value, f"must be >= {minimum}")
    if maximum is not None and result > maximum:
        raise fail(field, value, f"must be <= {maximum}")
    return result


def number(
    field: str,
    value: Any,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    positive: bool = False,
    allow_inf: bool = False,
) -> float:
    """``value`` as a finite ``float`` (an int or a float; bools and strings rejected)."""
    if _is_bool(value) or not isinstance(value, numbers.Real):
        raise fail(field, value, f"must be a number, not {kind_of(value)}")
    try:
        x = float(value)
    except OverflowError:
        raise fail(field, value, "is too large") from None
    if math.isnan(x) or (math.isinf(x) and not allow_inf):
        raise fail(field, value, "must be finite")
    if math.isfinite(x) and abs(x) > MAX_MAGNITUDE:
        raise fail(field, value, f"is too large (at most {MAX_MAGNITUDE:g} in absolute value)")
    if positive and not x > 0:
        raise fail(field, value, "must be positive")
    if minimum is not None and x < minimum:
        raise fail(field, value, f"must be >= {minimum:g}")
    if maximum is not None and x > maximum:
        raise fail(field, value, f"must be <= {maximum:g}")
    return x


def kind_of(value: Any) -> str:
    """What ``value`` is, in the words of JSON (``null``, ``a list``, ``an object`` ...)."""
    if value is None:
        return "null"
    if _is_bool(value):
        return "a boolean"
    if isinstance(value, numbers.Real):
        return "a number"
    for kinds, word in ((str, "a string"), ((list, tuple), "a list"), (dict, "an object")):
        if isinstance(value, kinds):
            return word
    return type(value).__name__


def _is_bool(value: Any) -> bool:
    """A Python or numpy boolean (``numpy.bool_`` is no ``bool`` subclass)."""
    kind = type(value)
    numpy_bool = kind.__module__ == "numpy" and kind.__name__ in ("bool", "bool_")
    return isinstance(value, bool) or numpy_bool


def nonneg(field: str, value: Any) -> float:
    """A finite number >= 0."""
    return number(field, value, minimum=0.0)


def positive(field: str, value: Any) -> float:
    """A finite number > 0."""
    return number(field, value, positive=True)


def boolean(field: str, value: Any) -> bool:
    """A JSON boolean; ``0``/``1`` and strings are rejected."""
    if not isinstance(value, bool):
        raise fail(field, value, f"must be true or false, not {kind_of(value)}")
    return value


def string(field: str, value: Any, *, nonempty: bool = True, max_length: int = 10_000) -> str:
    """A string (not a number, list or object)."""
    if not isinstance(value, str):
        raise fail(field, value, f"must be a string, not {kind_of(value)}")
    if nonempty and not value.strip():
        raise fail(field, value, "must not be empty")
    if len(value) > max_length:
        raise fail(field, value, f"longer than {max_length} characters")
    return value


def sequence(
    field: str, value: Any, *, max_length: int = MAX_COUNT, nonempty: bool = False
) -> list:
    """A JSON array (a list or tuple); objects and strings are rejected."""
    if not isinstance(value, list | tuple):
        raise fail(field, value, f"must be a list, not {kind_of(value)}")
    if nonempty and not value:
        raise fail(field, value, "must not be empty")
    if len(value) > max_length:
        raise fail(field, f"<{len(value)} items>", f"more than {max_length} items")
    return list(value)


def mapping(field: str, value: Any) -> dict:
    """A JSON object."""
    if not isinstance(value, dict):
        raise fail(field, value, f"must be an object, not {kind_of(value)}")
    return value


def choice(field: str, value: Any, options: Iterable[str]) -> str:
    """One of ``options`` (strings)."""
    allowed = list(options)
    if not isinstance(value, str) or value not in allowed:
        raise fail(field, value, f"must be one of {', '.join(map(repr, allowed))}")
    return value


def unique(field: str, names: Sequence[Any]) -> None:
    """Reject a repeated name in ``names``."""
    seen: set[Any] = set()
    for name in names:
        if name in seen:
            raise fail(field, name, "appears more than once")
        seen.add(name)


def version(data: dict, supported: Iterable[int] = (1,)) -> int:
    """The ``version`` field of an instance dictionary (absent means 1)."""
    allowed = tuple(supported)
    value = data.get("version", 1)
    if isinstance(value, bool) or not isinstance(value, int) or value not in allowed:
        readable = ", ".join(map(str, allowed))
        raise fail("version", value, f"unsupported; this energyopt reads {readable}")
    return value


#: The largest seed: every solver takes it (HiGHS and CP-SAT seeds are 32-bit ints).
MAX_SEED = 2**31 - 1


def seed(value: Any, field: str = "seed") -> int | None:
    """A random seed: ``None``, or an integer in ``0..MAX_SEED`` (the one rule for all
    methods; ``-5`` or ``2.5`` is refused before any work, never by one method only)."""
    if value is None:
        return None
    if _is_bool(value) or not isinstance(value, numbers.Integral):
        raise fail(field, value, f"must be a non-negative integer, not {kind_of(value)}")
    return integer(field, value, minimum=0, maximum=MAX_SEED)


def required(data: dict, key: str, where: str = "") -> Any:
    """``data[key]``; an :class:`InstanceError` naming the key when it is absent."""
    if key not in data:
        raise InstanceError(f"{where + ': ' if where else ''}missing field {key!r}")
    return data[key]


def csv_cell(value: Any) -> Any:
    """A CSV cell as a Python value for the readers above.

    Text that reads as a number becomes one (``"1410"`` -> 1410.0, ``"inf"`` -> inf, which
    :func:`number` then refuses); a numpy scalar becomes its Python value
    (``numpy.True_`` -> ``True``, which is no number).
    """
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return value
    try:
        return value.item()  # numpy scalar -> Python scalar
    except (AttributeError, ValueError):
        return value


def count_text(n: int, exact_up_to: int = 10**9) -> str:
    """A count for a message: ``"1,234"``, or ``"more than 10^N"`` for a huge one.

    A product of option counts can have thousands of digits (and Python refuses to
    print an integer of more than 4,300), so beyond ``exact_up_to`` only the power of
    ten is shown.

    >>> count_text(1234), count_text(10**40), count_text(10**40 + 1)
    ('1,234', '10^40', 'more than 10^40')
    """
    if n <= exact_up_to:
        return f"{n:,}"
    k = int((n.bit_length() - 1) * math.log10(2))  # 10^k <= n, perhaps not the largest
    while 10 ** (k + 1) <= n:
        k += 1
    return f"10^{k}" if n == 10**k else f"more than 10^{k}"


def one_line(text: str, limit: int = 200) -> str:
    """``text`` (a library's error message) on one line, cut to ``limit`` characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def columns(where: str, found: Sequence[Any], expected: Sequence[str]) -> None:
    """Reject a table missing any of ``expected`` columns, naming a few of those found.

    A file that is not a table at all (one enormous line read as a header of thousands
    of "columns") must give a short message, so at most five are shown, each shortened.
    """
    missing = [c for c in expected if c not in found]
    if not missing:
        return
    raise InstanceError(
        f"{where}: missing column(s) {', '.join(missing)} "
        f"(expected {','.join(expected)}; found {first_few(found)})"
    )


def first_few(names: Sequence[Any], count: int = 5) -> str:
    """The first ``count`` of ``names``, each shortened, and how many more there are."""
    head = ", ".join(shown(str(c))[:30] for c in list(names)[:count]) or "none"
    return head + (f" and {len(names) - count} more" if len(names) > count else "")


def fields(
    data: dict, where: str, *, required: Iterable[str], optional: Iterable[str] = ()
) -> None:
    """Reject missing required keys and unknown keys of ``data`` (an object at ``where``)."""
    req, opt = list(required), set(optional)
    missing = [k for k in req if k not in data]
    if missing:
        raise InstanceError(f"{where}: missing field {', '.join(map(repr, missing))}")
    unknown = sorted(set(data) - set(req) - opt)
    if unknown:
        shown_keys = ", ".join(map(repr, unknown[:5]))
        raise InstanceError(f"{where}: unknown field {shown_keys}")
