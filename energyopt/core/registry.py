"""Per-family registry of methods, and the one entry point :func:`solve`."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from energyopt.core.errors import EvaluationMismatchError
from energyopt.core.result import Result
from energyopt.core.status import SolutionStatus, TerminationReason
from energyopt.core.validate import options_like_defaults

if TYPE_CHECKING:
    from energyopt.core.family import FamilyHooks

__all__ = [
    "FAMILY_MODULES",
    "EvaluationMismatchError",
    "Method",
    "check_options_known",
    "families",
    "family_hooks",
    "get_method",
    "load_family",
    "method_options",
    "methods",
    "register",
    "solve",
    "unknown_options",
]

#: Entry-point group through which other packages add families (name -> package).
ENTRY_POINT_GROUP = "energyopt.families"


def _builtin_families() -> dict[str, str]:
    """Family name -> package, for every package ``energyopt/<name>/`` with a ``hooks.py``.

    Read from the file system: nothing is imported, so this is cheap.
    """
    root = Path(__file__).resolve().parents[1]
    return {p.parent.name: f"energyopt.{p.parent.name}" for p in sorted(root.glob("*/hooks.py"))}


#: Family name -> package whose import registers that family's methods (discovered:
#: the built-in families, then those of other distributions, see :func:`families`).
FAMILY_MODULES: dict[str, str] = _builtin_families()
_PLUGINS_READ = False


def families() -> list[str]:
    """The names of the known families, sorted.

    Besides the built-in ones, other distributions add families through the
    ``energyopt.families`` entry-point group (name = family, value = its package);
    they are read on the first call.
    """
    global _PLUGINS_READ
    if not _PLUGINS_READ:
        _PLUGINS_READ = True
        try:
            from importlib.metadata import entry_points

            for ep in entry_points(group=ENTRY_POINT_GROUP):
                FAMILY_MODULES.setdefault(ep.name, ep.value)
        except Exception:  # pragma: no cover - broken metadata must not stop the package
            pass
    return sorted(FAMILY_MODULES)


def family_hooks(family: str) -> FamilyHooks:
    """The :class:`~energyopt.core.family.FamilyHooks` of ``family`` (imports the family)."""
    load_family(family)
    return importlib.import_module(f"{FAMILY_MODULES[family]}.hooks").HOOKS


MethodFunction = Callable[..., Result]


@dataclasses.dataclass(frozen=True)
class Method:
    """A registered method.

    ``function(instance, *, time_limit, seed, **options) -> Result``.
    """

    family: str
    name: str
    function: MethodFunction
    exact: bool
    frontier: bool = False
    description: str = ""


_REGISTRY: dict[str, dict[str, Method]] = {}


def register(
    family: str, name: str, *, exact: bool, frontier: bool = False, description: str = ""
) -> Callable[[MethodFunction], MethodFunction]:
    """Class the decorated function as method ``name`` of ``family``."""

    def deco(fn: MethodFunction) -> MethodFunction:
        methods = _REGISTRY.setdefault(family, {})
        if name in methods and methods[name].function is not fn:
            raise ValueError(f"method {name!r} is already registered for family {family!r}")
        doc = description or ((fn.__doc__ or "").strip().splitlines() or [""])[0]
        methods[name] = Method(family, name, fn, exact, frontier, doc)
        return fn

    return deco


def load_family(family: str) -> None:
    """Import ``family``'s package, which registers its methods; a clear error if unknown."""
    if family not in FAMILY_MODULES and family not in families():
        raise ValueError(f"unknown family {family!r}; known: {', '.join(families())}")
    try:
        importlib.import_module(FAMILY_MODULES[family])
    except ModuleNotFoundError as exc:
        if exc.name != FAMILY_MODULES[family]:
            raise


_load = load_family  # its old private name


def methods(family: str) -> dict[str, Method]:
    """All methods registered for ``family``, by name."""
    load_family(family)
    return dict(_REGISTRY.get(family, {}))


def get_method(family: str, name: str) -> Method:
    """The method ``name`` of ``family``; a clear error listing the known ones otherwise."""
    known = methods(family)
    if name not in known:
        raise ValueError(
            f"unknown method {name!r} for family {family!r}; known: {', '.join(sorted(known))}"
        )
    return known[name]


def method_options(method: Method) -> dict[str, Any]:
    """The options of a registered method with their defaults (``None`` when required).

    ``time_limit`` and ``seed`` are every method's and are left out.
    """
    params = inspect.signature(method.function).parameters
    return {
        k: (None if p.default is inspect.Parameter.empty else p.default)
        for k, p in params.items()
        if p.kind is inspect.Parameter.KEYWORD_ONLY and k not in ("time_limit", "seed")
    }


def unknown_options(method: Method, options: dict[str, Any]) -> list[str]:
    """The names in ``options`` that ``method`` does not take (none when it takes ``**``)."""
    params = inspect.signature(method.function).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return []
    return sorted(set(options) - set(method_options(method)))


def check_options_known(methods: Iterable[Any], options: dict[str, Any]) -> None:
    """Raise ``ValueError`` for an option that none of ``methods`` takes, listing the valid ones.

    ``methods`` are registered :class:`Method` objects.
    """
    methods = list(methods)
    if not options or not methods:
        return
    unknown = set(options)
    for m in methods:
        unknown &= set(unknown_options(m, options))
    if unknown:
        valid = sorted({k for m in methods for k in method_options(m)})
        raise ValueError(
            f"-o {', '.join(sorted(unknown))}: no selected method takes this option; "
            f"valid: {', '.join(valid) or 'none'} (see 'energyopt methods FAMILY')"
        )


def solve(
    instance: Any,
    method: str,
    *,
    time_limit: float | None = None,
    seed: int | None = None,
    **options: Any,
) -> Result:
    """Solve ``instance`` with the registered ``method`` of its family.

    Parameters
    ----------
    instance
        An instance of any family (it names its family in ``instance.family``).
    method
        A method name registered for that family (see :func:`methods`).
    time_limit
        Wall-clock seconds the method may use; ``None`` for no limit.
    seed
        Random seed for randomized methods (and solver seeds).
    **options
        Method-specific options, recorded in ``Result.options``.

    Returns
    -------
    Result
        Solver failures and time limits come back as results with the matching
        termination reason and solution status; they are never raised. An
        objective that disagrees with the evaluator raises
        :class:`EvaluationMismatchError`, as it is a bug.
    """
    family = getattr(instance, "family", None)
    if family is None:
        raise TypeError(f"{type(instance).__name__} is not a problem instance (no .family)")
    m = get_method(family, method)
    if time_limit is not None and not time_limit > 0:
        raise ValueError(f"time_limit must be positive, got {time_limit!r}")
    unknown = unknown_options(m, options)
    if unknown:
        valid = ", ".join(f"{k} (default {v!r})" for k, v in method_options(m).items())
        raise ValueError(
            f"method {method!r} of family {family!r}: unknown option(s) "
            f"{', '.join(map(repr, unknown))}; valid: {valid or 'none'}"
        )
    try:
        inspect.signature(m.function).bind(instance, time_limit=time_limit, seed=seed, **options)
    except TypeError as exc:
        raise ValueError(f"method {method!r} of family {family!r}: {exc}") from None
    options_like_defaults(m.function, options)  # -o tau_s=true is no number
    tick = time.perf_counter()
    try:
        result = m.function(instance, time_limit=time_limit, seed=seed, **options)
    except (EvaluationMismatchError, KeyboardInterrupt):
        raise
    except Exception as exc:
        result = Result(
            family=family,
            instance_id=instance.instance_id,
            method=method,
            termination=TerminationReason.ERROR,
            status=SolutionStatus.NONE,
            options=dict(options),
            seed=seed,
            message=f"{type(exc).__name__}: {exc}",
        )
    runtime = time.perf_counter() - tick
    return dataclasses.replace(result, runtime_s=runtime, options=dict(options), seed=seed)
