"""What every family's instance shares: JSON round trip, content hash, clear load errors."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, ClassVar

from energyopt.core.errors import InstanceError
from energyopt.core.files import read_text, write_text
from energyopt.core.validate import fail, number

#: The largest instance file read (the biggest in the library is ~0.3 MiB).
MAX_FILE_BYTES = 256 * 2**20

#: Family name -> instance class, filled by the families' modules.
#: (family, kind) -> instance type. ``kind`` is ``None`` for a family's main type and
#: the file's ``"kind"`` field otherwise (e.g. ``"simulation"`` for whole-run scenarios).
INSTANCE_TYPES: dict[tuple[str, str | None], type[InstanceBase]] = {}


def check(condition: bool, field: str, value: Any, why: str) -> None:
    """Raise :class:`InstanceError` naming ``field`` and ``value`` unless ``condition``."""
    if not condition:
        raise fail(field, value, why)


def finite_nonneg(field: str, value: Any) -> float:
    """``value`` as a float, checked finite and >= 0 (a bool or a string is no number)."""
    return number(field, value, minimum=0.0)


class InstanceBase:
    """Mixin for frozen instance dataclasses.

    Subclasses define ``family``, ``to_dict()`` and ``from_dict()``; the dictionary
    holds plain JSON types only and starts with ``{"family": ..., "version": 1}``. A
    family's further instance types (its whole-run scenarios) also define ``kind``,
    written to their files as the ``"kind"`` field that :func:`load_instance` reads.
    """

    family: ClassVar[str]
    kind: ClassVar[str | None] = None
    format_version: ClassVar[int] = 1

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "family" in cls.__dict__:
            INSTANCE_TYPES[(cls.family, cls.__dict__.get("kind"))] = cls

    def to_dict(self) -> dict[str, Any]:  # pragma: no cover - abstract
        raise NotImplementedError

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> InstanceBase:  # pragma: no cover - abstract
        raise NotImplementedError

    def to_json(self, path: str | Path | None = None, *, indent: int | None = 1) -> str:
        """The instance as JSON text; also written to ``path`` when given."""
        text = json.dumps(self.to_dict(), indent=indent, sort_keys=False)
        if path is not None:
            write_text(path, text + "\n", "instance file")
        return text

    @classmethod
    def from_json(cls, source: str | Path) -> InstanceBase:
        """Read an instance from a JSON file path or JSON text."""
        return _load(source, expected=cls)

    @property
    def instance_id(self) -> str:
        """Stable content hash: the same data gives the same id on every machine."""
        canon = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canon.encode()).hexdigest()[:16]


def load_instance(source: str | Path) -> InstanceBase:
    """Read an instance of any family from a JSON file (or JSON text)."""
    return _load(source, expected=None)


def _load(source: str | Path, expected: type[InstanceBase] | None) -> InstanceBase:
    from energyopt.core.registry import families, load_family

    where, text = _read_source(source)
    try:
        data = json.loads(text, object_pairs_hook=_object)
    except _DuplicateKey as exc:
        raise InstanceError(f"{where}: key {exc} appears twice in one object") from None
    except json.JSONDecodeError as exc:
        raise InstanceError(f"{where}: not valid JSON ({exc.msg}, line {exc.lineno})") from None
    except RecursionError:
        raise InstanceError(f"{where}: JSON nested too deeply") from None
    except ValueError as exc:  # e.g. an integer literal beyond Python's digit limit
        raise InstanceError(f"{where}: not valid JSON ({str(exc)[:80]})") from None
    if not isinstance(data, dict):
        raise InstanceError(f"{where}: expected a JSON object, got {type(data).__name__}")
    family = data.get("family")
    if not isinstance(family, str) or family not in families():
        known = ", ".join(families())
        raise InstanceError(f"{where}: field {fail(repr('family'), family, 'not one of ' + known)}")
    load_family(family)
    kind = data.get("kind")
    cls = INSTANCE_TYPES.get((family, kind)) if kind is None or isinstance(kind, str) else None
    if cls is None:
        if kind is not None:
            kinds = sorted(k for f, k in INSTANCE_TYPES if f == family and k is not None)
            why = "not one of " + (", ".join(map(repr, kinds)) or "(none)")
            raise InstanceError(f"{where}: field {fail(repr('kind'), kind, why)}")
        raise InstanceError(f"{where}: family {family!r} has no instance type installed")
    if expected is not None and expected.family != family:
        raise InstanceError(f"{where}: holds a {family!r} instance, not a {expected.family!r} one")
    try:
        return cls.from_dict(data)
    except InstanceError as exc:
        raise InstanceError(f"{where}: {exc}") from None
    except (KeyError, TypeError, ValueError, OverflowError, RecursionError) as exc:
        what = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)[:200]
        raise InstanceError(f"{where}: {what}") from None


class _DuplicateKey(ValueError):
    pass


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object; a repeated key is an error (``json`` would keep the last silently)."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        repeated = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise _DuplicateKey(repr(repeated))
    return out


def _read_source(source: str | Path) -> tuple[str, str]:
    """``(where, text)``: a path is read (even one whose name starts with ``{``), else text.

    A string is JSON text only when it looks like a whole JSON document (``{...}`` or
    ``[...]``) and names no file: ``'{weird}.json'`` is a file name, even a missing one.
    """
    stripped = source.strip() if isinstance(source, str) else ""
    if stripped[:1] + stripped[-1:] in ("{}", "[]"):
        try:
            is_file = Path(source).is_file()
        except (OSError, ValueError):
            is_file = False
        if not is_file:
            return "<text>", source
    return str(source), read_text(source, cap=MAX_FILE_BYTES, what="instance file")
