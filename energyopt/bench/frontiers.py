"""Cross-checks of PEM frontiers: no method's point may lie below a proven exact frontier.

For a PEM choice x with makespan m(x), the energy at an iteration-time deadline
T >= m(x) is C(x) + P_b S T (Perseus Eq. 4: every GPU draws P_blocking while it
waits), so a point (m_p, E_p) of an exact frontier gives the feasible energy
E_p + P_b S (T - m_p) at every T >= m_p. When the exact frontier is complete, the
least of these over its points is E*(T), the minimal energy at T, for T up to the
frontier's slowest point (beyond it, a slower choice may need less energy before
blocking, so points there are not compared). A point (T, E)
of any method with E below that value contradicts the frontier: either that
method's point or the frontier is wrong (a bug either way), and a point faster
than the frontier's fastest is infeasible or the frontier missed it.
"""

from __future__ import annotations

import json
from typing import Any

from energyopt.bench.store import ResultsStore
from energyopt.core.registry import methods

#: Relative tolerance of the comparison.
FRONTIER_RTOL = 1e-6


def exact_energy_at(points: list[tuple[float, float]], pbs_w: float, t_s: float) -> float | None:
    """min over exact points (m_p, E_p) with m_p <= t_s of E_p + pbs_w * (t_s - m_p).

    ``None`` when every point is slower than ``t_s``.
    """
    values = [e + pbs_w * (t_s - m) for m, e in points if m <= t_s * (1 + 1e-12)]
    return min(values) if values else None


def frontier_contradictions(store: ResultsStore) -> list[str]:
    """One line per point of a pipeline frontier below a proven exact frontier."""
    known = methods("pipeline")
    exact: dict[str, list[tuple[str, list[tuple[float, float]]]]] = {}
    others: dict[str, list[tuple[str, list[tuple[float, float]]]]] = {}
    for res in store.iter_results():
        if res.get("family") != "pipeline" or not res.get("frontier"):
            continue
        pts = [(float(p["deadline_s"]), float(p["objective"])) for p in res["frontier"]]
        m = known.get(res["method"])
        label = f"{res['method']} (seed {res.get('seed')})"
        # Only a frontier proven optimal point by point is a reference.
        if m is not None and m.exact and res.get("termination") == "optimal":
            exact.setdefault(res["instance_id"], []).append((label, pts))
        others.setdefault(res["instance_id"], []).append((label, pts))
    lines = []
    for iid, refs in exact.items():
        text = store.instance_json(iid)
        if text is None:
            continue
        data: dict[str, Any] = json.loads(text)
        pbs_w = float(data["p_blocking_w"]) * int(data["num_stages"])
        name = data.get("name") or iid
        for ref_label, ref in refs:
            t_fast = min(m for m, _ in ref)
            t_slow = max(m for m, _ in ref)
            for label, pts in others.get(iid, []):
                if label == ref_label:
                    continue
                for t_s, e_j in pts:
                    if t_s > t_slow * (1 + FRONTIER_RTOL):
                        # Beyond the frontier's slowest point (the minimal-energy iteration)
                        # a slower choice with less energy before blocking may exist.
                        continue
                    best = exact_energy_at(ref, pbs_w, t_s)
                    if best is None:
                        if t_s < t_fast * (1 - FRONTIER_RTOL):
                            lines.append(
                                f"pipeline {name}: {label} point at {t_s!r} s is faster than "
                                f"the fastest iteration time {t_fast!r} s of {ref_label}"
                            )
                        continue
                    if e_j < best - FRONTIER_RTOL * max(1.0, abs(best)):
                        lines.append(
                            f"pipeline {name}: {label} point ({t_s!r} s, {e_j!r} J) below the "
                            f"exact frontier of {ref_label} ({best!r} J at that time)"
                        )
    return lines
