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
from energyopt.core.methodoptions import RESERVED, MethodOption
from energyopt.core.result import Result
from energyopt.core.status import SolutionStatus, TerminationReason
from energyopt.core.validate import seed as check_seed
from energyopt.core.validate import shown

if TYPE_CHECKING:
    from energyopt.core.family import FamilyHooks

__all__ = [
    "FAMILY_MODULES",
    "EvaluationMismatchError",
    "Method",
    "MethodOption",
    "call_arguments",
    "check_options",
    "check_options_known",
    "check_time_limit",
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

    ``function(instance, *, time_limit, seed, **fixed, **options) -> Result``, where
    ``time_limit`` and ``seed`` are passed when the function takes them.

    Attributes
    ----------
    options
        The options, declared once with type, range and default
        (:class:`~energyopt.core.methodoptions.MethodOption`).
    fixed
        Keyword arguments the registration fixes (not options: one entry point
        registered as several methods, e.g. ``method="perseus"``).
    passes_options_to
        The name of the option whose value names another method of the family that
        gets every option not declared here (``exact-frontier``'s ``solver``).
    takes
        Which of ``time_limit`` and ``seed`` the function takes.
    """

    family: str
    name: str
    function: MethodFunction
    exact: bool
    frontier: bool = False
    description: str = ""
    options: tuple[MethodOption, ...] = ()
    fixed: tuple[tuple[str, Any], ...] = ()
    passes_options_to: str | None = None
    takes: frozenset[str] = frozenset(("time_limit", "seed"))

    def option(self, name: str) -> MethodOption | None:
        """The declaration of option ``name``; ``None`` when the method has none of that name."""
        return next((o for o in self.options if o.name == name), None)


_REGISTRY: dict[str, dict[str, Method]] = {}


def register(
    family: str,
    name: str,
    *,
    exact: bool,
    frontier: bool = False,
    description: str = "",
    options: tuple[MethodOption, ...] = (),
    fixed: dict[str, Any] | None = None,
    passes_options_to: str | None = None,
) -> Callable[[MethodFunction], MethodFunction]:
    """Class the decorated function as method ``name`` of ``family``, with its options.

    ``options`` is the one declaration of the method's options (type, range, default);
    every value is checked against it before the method runs (:func:`check_options`).
    The declaration is checked against the function here, once: each option must be
    one of its keywords, with the same default when the function has one.
    """

    def deco(fn: MethodFunction) -> MethodFunction:
        methods = _REGISTRY.setdefault(family, {})
        if name in methods and methods[name].function is not fn:
            raise ValueError(f"method {name!r} is already registered for family {family!r}")
        doc = description or ((fn.__doc__ or "").strip().splitlines() or [""])[0]
        takes = _declared_against(f"{family}/{name}", fn, options, fixed or {})
        methods[name] = Method(
            family,
            name,
            fn,
            exact,
            frontier,
            doc,
            tuple(options),
            tuple(sorted((fixed or {}).items())),
            passes_options_to,
            takes,
        )
        return fn

    return deco


def _declared_against(
    where: str, fn: MethodFunction, options: tuple[MethodOption, ...], fixed: dict[str, Any]
) -> frozenset[str]:
    """Check a registration against ``fn``'s signature; which reserved arguments it takes.

    A programming error (an option the function does not take, a default that
    differs from the function's, an option also fixed) raises ``TypeError`` at import.
    """
    params = inspect.signature(fn).parameters
    any_keyword = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    names = [o.name for o in options]
    if len(set(names)) != len(names) or set(names) & set(fixed):
        raise TypeError(f"{where}: an option is declared twice or also fixed")
    for key in [*names, *fixed]:
        p = params.get(key)
        if p is None and not any_keyword:
            raise TypeError(f"{where}: {fn.__qualname__} takes no keyword {key!r}")
    for o in options:
        p = params.get(o.name)
        if p is not None and p.default is not inspect.Parameter.empty and p.default != o.default:
            raise TypeError(
                f"{where}: option {o.name!r} declared with default {o.default!r}, "
                f"{fn.__qualname__} has {p.default!r}"
            )
    return frozenset(k for k in ("time_limit", "seed") if k in params or any_keyword)


def load_family(family: str) -> None:
    """Import ``family``'s package, which registers its methods; a clear error if unknown."""
    if family not in FAMILY_MODULES and family not in families():
        raise ValueError(f"unknown family {family!r}; known: {', '.join(families())}")
    try:
        importlib.import_module(FAMILY_MODULES[family])
    except ModuleNotFoundError as exc:
        if exc.name != FAMILY_MODULES[family]:
            raise


def methods(family: str, instance: Any = None) -> dict[str, Method]:
    """The methods registered for ``family``, by name; with ``instance``, only those that
    run on it (a whole-run simulation scenario has its own methods, see
    :attr:`~energyopt.core.family.FamilyHooks.method_applies`)."""
    load_family(family)
    found = dict(_REGISTRY.get(family, {}))
    applies = None if instance is None else family_hooks(family).method_applies
    if applies is None:
        return found
    return {name: m for name, m in found.items() if applies(instance, name)}


def get_method(family: str, name: str) -> Method:
    """The method ``name`` of ``family``; a clear error listing the known ones otherwise."""
    known = methods(family)
    if name not in known:
        raise ValueError(
            f"unknown method {name!r} for family {family!r}; known: {', '.join(sorted(known))}"
        )
    return known[name]


def method_options(method: Method) -> dict[str, Any]:
    """The declared options of a registered method with their defaults.

    ``time_limit`` and ``seed`` are every method's and are not options.
    """
    return {o.name: o.default for o in method.options}


def _accepted(method: Method) -> set[str]:
    """Every option name ``method`` takes: its own, and those it passes on."""
    names = {o.name for o in method.options}
    target = method.option(method.passes_options_to) if method.passes_options_to else None
    for other in (target.choices or ()) if target is not None else ():
        names |= _accepted(get_method(method.family, other))
    return names


def unknown_options(method: Method, options: dict[str, Any]) -> list[str]:
    """The names in ``options`` that ``method`` does not take."""
    return sorted(set(options) - _accepted(method))


def _reserved(key: str, value: Any) -> ValueError:
    how = {
        "instance": "the instance is the file or the first argument",
        "time_limit": "give it as --time-limit or solve(..., time_limit=)",
        "seed": "give it as --seed or solve(..., seed=)",
    }[key]
    return ValueError(f"option {key} = {shown(value)}: not a method option ({how})")


def check_options(method: Method, options: dict[str, Any]) -> dict[str, Any]:
    """``options`` checked against ``method``'s declaration, before any work.

    Returns the values as the method takes them (``3.0`` for an int option is 3).
    Raises a one-line ``ValueError`` naming the method, the option and the value:
    for a reserved name (``instance``, ``time_limit``, ``seed``), an unknown option,
    or a value of the wrong type or out of range. Options a method passes on
    (:attr:`Method.passes_options_to`) are checked against the receiving method.
    """
    where = f"method {method.name!r} of family {method.family!r}"
    own: dict[str, Any] = {}
    rest: dict[str, Any] = {}
    for key, value in options.items():
        if key in RESERVED:
            raise _reserved(key, value)
        declared = method.option(key)
        if declared is None:
            rest[key] = value
            continue
        try:
            own[key] = declared.check(value)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
    if rest and method.passes_options_to is not None:
        target = method.option(method.passes_options_to)
        name = own.get(method.passes_options_to, target.default if target else None)
        return {**own, **check_options(get_method(method.family, name), rest)}
    if rest:
        valid = ", ".join(
            f"{o.name} ({o.range_text()}, default {o.default!r})" for o in method.options
        )
        raise ValueError(
            f"{where}: unknown option(s) {', '.join(map(repr, sorted(rest)))}; "
            f"valid: {valid or 'none'}"
        )
    return own


def check_options_known(methods: Iterable[Method], options: dict[str, Any]) -> None:
    """Raise ``ValueError`` for an option that none of ``methods`` takes, listing the valid ones.

    For a batch of methods sharing one set of ``-o`` options: each method gets the
    options it takes (values are checked per method, :func:`check_options`).
    """
    methods = list(methods)
    if not options or not methods:
        return
    for key, value in options.items():
        if key in RESERVED:
            raise _reserved(key, value)
    unknown = set(options)
    for m in methods:
        unknown &= set(unknown_options(m, options))
    if unknown:
        valid = sorted({k for m in methods for k in _accepted(m)})
        raise ValueError(
            f"-o {', '.join(sorted(unknown))}: no selected method takes this option; "
            f"valid: {', '.join(valid) or 'none'} (see 'energyopt methods FAMILY')"
        )


def check_time_limit(time_limit: Any) -> float | None:
    """``time_limit`` as a positive number of seconds (``None``: no limit); else ``ValueError``."""
    if time_limit is None:
        return None
    if isinstance(time_limit, bool) or not isinstance(time_limit, (int, float)):
        raise ValueError(f"time_limit = {shown(time_limit)}: must be a positive number of seconds")
    if not time_limit > 0:  # NaN fails too
        raise ValueError(f"time_limit = {shown(time_limit)}: must be positive")
    return float(time_limit)


def call_arguments(
    method: Method, values: dict[str, Any], time_limit: float | None, seed: int | None
) -> dict[str, Any]:
    """The keywords ``method.function`` is called with: defaults, fixed, ``values``."""
    kwargs = {o.name: o.default for o in method.options}
    kwargs.update(method.fixed)
    kwargs.update(values)
    if "time_limit" in method.takes:
        kwargs["time_limit"] = time_limit
    if "seed" in method.takes:
        kwargs["seed"] = seed
    return kwargs


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
    seed = check_seed(seed)  # one rule for every method: None or 0..2^31-1
    applies = family_hooks(family).method_applies
    if applies is not None and not applies(instance, method):
        raise ValueError(
            f"method {method!r} of family {family!r} does not run on a "
            f"{type(instance).__name__}; see 'energyopt methods {family}'"
        )
    time_limit = check_time_limit(time_limit)
    kwargs = call_arguments(m, check_options(m, options), time_limit, seed)
    tick = time.perf_counter()
    try:
        result = m.function(instance, **kwargs)
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
