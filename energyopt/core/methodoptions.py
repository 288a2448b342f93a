"""A method's options, declared once where the method is registered: type, range, default.

Modelled on PyVRP's ``SolveParams`` (typed parameters with their defaults in one
place): each family's ``methods.py`` passes a tuple of :class:`MethodOption` to
:func:`energyopt.core.registry.register`; the registry checks every value against
it before the method starts, fills in the defaults, and ``energyopt methods FAMILY
--json`` prints it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

from energyopt.core.validate import MAX_COUNT, MAX_MAGNITUDE, kind_of, shown

__all__ = ["RESERVED", "MethodOption"]

#: Arguments every method gets from :func:`energyopt.core.registry.solve` itself: never options.
RESERVED = ("instance", "time_limit", "seed")

_TYPE_NAMES = {bool: "bool", int: "int", float: "float", str: "str"}


@dataclasses.dataclass(frozen=True)
class MethodOption:
    """One option of a registered method.

    Attributes
    ----------
    name
        The keyword the method's function takes (``-o NAME=VALUE`` on the command line).
    kind
        ``bool``, ``int``, ``float`` or ``str``; any other class is checked with
        ``isinstance`` (an object only Python callers can pass).
    default
        The value when the option is not given (``None`` allowed only with ``nullable``).
    description
        One line for ``energyopt methods``.
    minimum, maximum
        Inclusive range of a number.
    above, below
        Exclusive ends of a number: the value must be greater than ``above`` and
        less than ``below``.
    choices
        The allowed strings of a ``str`` option.
    nullable
        Whether ``None`` (JSON ``null``) is a value: it means what ``description`` says.
    validator
        A check of a value that passed the type check (e.g. a known solver name): it
        returns the value or raises ``ValueError``.
    """

    name: str
    kind: type
    default: Any
    description: str
    minimum: float | None = None
    maximum: float | None = None
    above: float | None = None
    below: float | None = None
    choices: tuple[str, ...] | None = None
    nullable: bool = False
    validator: Callable[[Any], Any] | None = dataclasses.field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.name in RESERVED:
            raise ValueError(f"option {self.name!r}: reserved for every method")
        if self.default is None and not self.nullable:
            raise ValueError(f"option {self.name!r}: default None needs nullable=True")
        if self.default is not None:
            self.check(self.default)

    @property
    def type_name(self) -> str:
        """``bool``, ``int``, ``float``, ``str`` or the class name."""
        return _TYPE_NAMES.get(self.kind, self.kind.__name__)

    def check(self, value: Any) -> Any:
        """``value`` as this option takes it; a one-line ``ValueError`` otherwise.

        A bool is no number, 2.5 is no integer, ``"x"`` is no bool; an integral
        float (``3.0``) is the integer 3; an int is a float.
        """
        if value is None:
            if self.nullable:
                return None
            raise self._fail(value, f"must be {self._wanted()}, not null")
        if self.kind is bool:
            if type(value) is not bool:
                raise self._fail(value, f"must be true or false, not {kind_of(value)}")
            return value
        if self.kind in (int, float):
            return self._check_number(value)
        if self.kind is str:
            if not isinstance(value, str):
                raise self._fail(value, f"must be {self._wanted()}, not {kind_of(value)}")
            if self.choices is not None and value not in self.choices:
                raise self._fail(value, f"must be one of {', '.join(self.choices)}")
            return self._validated(value)
        if not isinstance(value, self.kind):
            raise self._fail(value, f"must be a {self.kind.__name__}, not {kind_of(value)}")
        return value

    def _validated(self, value: Any) -> Any:
        if self.validator is None or value == self.default:
            return value  # the default is valid (and its check may import a solver stack)
        try:
            return self.validator(value)
        except ValueError as exc:
            raise self._fail(value, str(exc)) from None

    def _check_number(self, value: Any) -> int | float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self._fail(value, f"must be {self._wanted()}, not {kind_of(value)}")
        if isinstance(value, float) and not math.isfinite(value):
            raise self._fail(value, "must be finite")
        if self.kind is int:
            if isinstance(value, float) and not value.is_integer():
                raise self._fail(value, "must be an integer")
            x: int | float = int(value)
            limit = MAX_COUNT
        else:
            x = float(value)
            limit = MAX_MAGNITUDE
        if abs(x) > limit:
            raise self._fail(value, f"is too large (at most {limit:g} in absolute value)")
        if self.above is not None and not x > self.above:
            raise self._fail(value, f"must be > {self.above:g}")
        if self.below is not None and not x < self.below:
            raise self._fail(value, f"must be < {self.below:g}")
        if self.minimum is not None and x < self.minimum:
            raise self._fail(value, f"must be >= {self.minimum:g}")
        if self.maximum is not None and x > self.maximum:
            raise self._fail(value, f"must be <= {self.maximum:g}")
        return x

    def _wanted(self) -> str:
        return {
            bool: "true or false",
            int: "an integer",
            float: "a number",
            str: "a string",
        }.get(self.kind, f"a {self.type_name}")

    def _fail(self, value: Any, why: str) -> ValueError:
        return ValueError(f"option {self.name} = {shown(value)}: {why}")

    def to_dict(self) -> dict[str, Any]:
        """The declaration as JSON-ready fields (for ``energyopt methods --json``)."""
        out: dict[str, Any] = {
            "name": self.name,
            "type": self.type_name,
            "default": self.default,
            "nullable": self.nullable,
            "description": self.description,
        }
        for key in ("minimum", "maximum", "above", "below"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.choices is not None:
            out["choices"] = list(self.choices)
        return out

    def range_text(self) -> str:
        """The allowed values in a few words (``int >= 1 or null``, ``hull|exponential``)."""
        if self.choices is not None:
            text = "|".join(self.choices)
        else:
            parts = [self.type_name]
            if self.above is not None:
                parts.append(f"> {self.above:g}")
            if self.below is not None:
                parts.append(f"< {self.below:g}")
            if self.minimum is not None:
                parts.append(f">= {self.minimum:g}")
            if self.maximum is not None:
                parts.append(f"<= {self.maximum:g}")
            text = " ".join(parts)
        return text + (" or null" if self.nullable else "")


def flag(name: str, default: bool, description: str) -> MethodOption:
    """A bool option."""
    return MethodOption(name, bool, default, description)


def integer(
    name: str,
    default: int | None,
    description: str,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    nullable: bool = False,
) -> MethodOption:
    """An int option in ``[minimum, maximum]``."""
    return MethodOption(
        name, int, default, description, minimum=minimum, maximum=maximum, nullable=nullable
    )


def number(
    name: str,
    default: float | None,
    description: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    above: float | None = None,
    below: float | None = None,
    nullable: bool = False,
) -> MethodOption:
    """A finite float option in ``[minimum, maximum]``, ``> above`` and ``< below``."""
    return MethodOption(
        name,
        float,
        default,
        description,
        minimum=minimum,
        maximum=maximum,
        above=above,
        below=below,
        nullable=nullable,
    )


def choice(name: str, default: str, choices: tuple[str, ...], description: str) -> MethodOption:
    """A str option that is one of ``choices``."""
    return MethodOption(name, str, default, description, choices=tuple(choices))


def text(
    name: str, default: str, description: str, validator: Callable[[Any], Any] | None = None
) -> MethodOption:
    """A str option, checked by ``validator`` when given (e.g. a known solver name)."""
    return MethodOption(name, str, default, description, validator=validator)


def instance_of(name: str, kind: type, description: str) -> MethodOption:
    """An object option only Python callers can give (``None`` when absent)."""
    return MethodOption(name, kind, None, description, nullable=True)
