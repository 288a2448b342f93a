"""Plain-text tables of results, for the CLI and the demo."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from energyopt.core.result import Result


def _fmt(x: object, spec: str = ".6g") -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return format(x, spec)
    return str(x)


def format_table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """Left-aligned text columns, with a rule under the header."""
    cells = [[str(h) for h in header]] + [[_fmt(c) for c in r] for r in rows]
    widths = [max(len(r[j]) for r in cells) for j in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def result_table(results: Iterable[Result]) -> str:
    """One row per result: method, termination, status, objective, bound, gap, runtime."""
    rows = []
    for r in results:
        g = r.gap
        rows.append(
            [
                r.method,
                r.termination.value,
                r.status.value,
                r.objective,
                r.bound,
                None if g is None else f"{100 * g:.4f}%",
                f"{r.runtime_s:.3f}",
                f"{r.solver} {r.solver_version}".strip(),
            ]
        )
    return format_table(
        ["method", "termination", "status", "objective", "bound", "gap", "runtime_s", "solver"],
        rows,
    )
