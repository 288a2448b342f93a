"""The tuning family's part of the gap report: references and regret curves (issue 25).

Every replay of a seed runs on the same realisation, so its results share two
references (:mod:`energyopt.tuning.realisation`): the clairvoyant lower bound (each
result's ``bound``) and the best fixed arm in hindsight. :func:`report_sections` shows
them per instance and seed beside every method's cost, with the optimum in expectation
``T * c*`` as a documented figure, and draws the regret curves against both references
(:func:`energyopt.plot.regret_curves`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from energyopt.core.gap import gap
from energyopt.core.sections import ReportSection, SectionPlot

#: At most this many regret plots (the first instances by name, their smallest seed).
MAX_PLOTS = 12
#: The references of a result's ``extra`` and their curves.
CURVES = {"clairvoyant": "regret_vs_clairvoyant_curve", "hindsight": "regret_vs_hindsight_curve"}


def _with_references(results: Sequence[Any]) -> list[Any]:
    """The results that carry the references (replays scored since issue 25)."""
    return [
        r
        for r in results
        if r.objective is not None and isinstance(r.extra.get("clairvoyant_bound"), int | float)
    ]


def regret_frame(results: Sequence[Any]) -> pd.DataFrame:
    """Cumulative regret per recurrence against both references, one row per point.

    Columns ``instance_id``, ``method``, ``seed``, ``reference``, ``recurrence``,
    ``regret``: the input of :func:`energyopt.plot.regret_curves`.
    """
    rows = []
    for r in _with_references(results):
        for reference, key in CURVES.items():
            curve = r.extra.get(key) or []
            rows += [
                (r.instance_id, r.method, r.seed, reference, t, float(v))
                for t, v in enumerate(curve)
            ]
    cols = ["instance_id", "method", "seed", "reference", "recurrence", "regret"]
    return pd.DataFrame(rows, columns=cols)


def _num(x: Any) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.6g}"


def _pct(x: Any) -> str:
    return "-" if x is None else f"{100 * x:.2f} %"


def _arm(cfg: Any) -> str:
    return "-" if not cfg else f"b={cfg[0]}, {cfg[1]:g} W"


def _regret(objective: float, reference: Any) -> float | None:
    """``objective - reference``; 0 within float rounding (the same arm, summed apart)."""
    if reference is None or not math.isfinite(reference):
        return None
    d = objective - reference
    return 0.0 if abs(d) <= 1e-9 * max(1.0, abs(reference)) else d


def _rows(results: list[Any], names: Mapping[str, str]) -> list[tuple[str, ...]]:
    rows = []
    key = lambda r: (names.get(r.instance_id, r.instance_id), r.seed or 0, r.method)  # noqa: E731
    for r in sorted(results, key=key):
        ex = r.extra
        hind = ex.get("hindsight_objective")
        rows.append(
            (
                names.get(r.instance_id, r.instance_id[:8]),
                str(r.seed),
                r.method,
                _num(r.objective),
                _num(ex["clairvoyant_bound"]),
                _pct(gap(r.objective, ex["clairvoyant_bound"])),
                _arm(ex.get("hindsight_config")),
                _num(hind),
                _num(_regret(r.objective, hind)),
                _num(ex.get("expected_optimum")),
            )
        )
    return rows


def _plots(results: list[Any], names: Mapping[str, str]) -> list[SectionPlot]:
    by_instance: dict[str, list[Any]] = {}
    for r in results:
        by_instance.setdefault(r.instance_id, []).append(r)
    order = sorted(by_instance, key=lambda i: names.get(i, i))[:MAX_PLOTS]
    plots = []
    for iid in order:
        seed = min((r.seed or 0) for r in by_instance[iid])
        chosen = [r for r in by_instance[iid] if (r.seed or 0) == seed]
        frame = regret_frame(chosen)
        title = f"{names.get(iid, iid[:8])} (seed {seed}): regret vs clairvoyant / hindsight"

        def draw(ax: Any, frame: pd.DataFrame = frame, title: str = title) -> Any:
            from energyopt.plot import regret_curves

            return regret_curves(frame, ax=ax, title=title)

        plots.append(SectionPlot(f"tuning-regret-{iid[:12]}-seed{seed}.png", draw))
    return plots


def report_sections(results: Sequence[Any], names: Mapping[str, str]) -> list[ReportSection]:
    """The references section of the tuning report (``FamilyHooks.report_sections``)."""
    rs = _with_references(results)
    if not rs:
        return []
    text = (
        "Every method of a seed replays the same realisation (common random numbers: the "
        "same sampled training path for each recurrence, batch size and attempt). The "
        "clairvoyant bound is, per recurrence, the least any policy could pay on that "
        "realisation; it is every result's proven bound and the gaps are against it. The "
        "best fixed arm in hindsight is the batch size that, run every recurrence at its "
        "best power limit, costs least on the realisation (the Zeus paper's regret "
        "reference; a learning policy may beat it). T x c* is the optimum in expectation "
        "over the trace (Eqs. 6-7): a documented figure, not a bound.",
        "Simulated: the costs are replays of recorded (or generated) traces, not new runs.",
    )
    head = (
        "instance", "seed", "method", "cost (J)", "clairvoyant bound (J)", "gap to bound",
        "best fixed arm", "its cost (J)", "regret vs that arm (J)", "T x c* (J)",
    )  # fmt: skip
    return [
        ReportSection(
            title="Clairvoyant bound, best fixed arm in hindsight and regret",
            paragraphs=text,
            head=head,
            rows=tuple(_rows(rs, names)),
            plots=tuple(_plots(rs, names)),
        )
    ]
