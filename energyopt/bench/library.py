"""The instance library: ``instances/<family>/<suite>/*.json`` and ``instances/index.csv``.

The JSON files are exactly what each family's ``suite(name)`` generates (the
instances record their generator and seed themselves), so the library can be
regenerated and checked byte for byte. The index lists every file with the best
objective known for it, the best proven lower bound, and the method and run
(``<run id>/seed=<seed>`` of a results store) that produced each.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from energyopt.bench.families import (
    SUITE_NAMES,
    families_with_suites,
    load_instance_file,
    suite_instances,
)
from energyopt.bench.store import ResultsStore
from energyopt.core.files import MAX_CSV_BYTES, read_text, write_text
from energyopt.core.gap import GAP_ABS_TOL, gap
from energyopt.core.instance import InstanceError
from energyopt.core.registry import FAMILY_MODULES

INDEX_NAME = "index.csv"
INDEX_COLUMNS = (
    "family",
    "suite",
    "file",
    "instance_id",
    "name",
    "generator",
    "best_objective",
    "best_objective_method",
    "best_objective_run",
    "best_bound",
    "best_bound_method",
    "best_bound_run",
)
_BEST_COLUMNS = INDEX_COLUMNS[6:]
#: Relative tolerance of the check "best bound <= best objective".
BOUND_RTOL = 1e-7


@dataclass(frozen=True)
class LibraryFile:
    """One instance file of the library, as its suite generates it."""

    family: str
    suite: str
    file: str
    """Path relative to the library root, with forward slashes."""
    instance_id: str
    name: str
    generator: str
    text: str


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60]


def expected_files(
    families: Sequence[str] | None = None, suites: Sequence[str] = SUITE_NAMES
) -> list[LibraryFile]:
    """Every library file the families' suites generate, in a fixed order."""
    out = []
    for family in families_with_suites(families):
        for suite in suites:
            for i, inst in enumerate(suite_instances(family, suite)):
                name = str(getattr(inst, "name", "") or "")
                stem = f"{i:03d}-{_slug(name) or inst.instance_id}"
                out.append(
                    LibraryFile(
                        family=family,
                        suite=suite,
                        file=f"{family}/{suite}/{stem}.json",
                        instance_id=inst.instance_id,
                        name=name,
                        generator=f"energyopt.{family}.suites.suite({suite!r})[{i}]",
                        text=inst.to_json(indent=1) + "\n",
                    )
                )
    names = [f.file for f in out]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"suites generate clashing file names: {dupes}")
    return out


def generate(
    root: str | Path,
    families: Sequence[str] | None = None,
    suites: Sequence[str] = SUITE_NAMES,
) -> list[LibraryFile]:
    """Write the library under ``root`` and its index; drop stale files of those suites.

    Best known values already in the index are kept for instances still there.
    """
    root = Path(root)
    files = expected_files(families, suites)
    old_index = read_index(root) if (root / INDEX_NAME).exists() else []
    for family in {f.family for f in files}:
        for suite in suites:
            d = root / family / suite
            if d.is_dir():
                keep = {f.file for f in files}
                for p in d.glob("*.json"):
                    if f"{family}/{suite}/{p.name}" not in keep:
                        p.unlink()
    for f in files:
        path = root / f.file
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text(path, f.text, "instance file")  # whole or not at all
    # Rows of families or suites not regenerated now stay as they were.
    regenerated = {(f.family, f.suite) for f in files}
    best = {(r["family"], r["instance_id"]): r for r in old_index}
    rows = [r for r in old_index if (r["family"], r["suite"]) not in regenerated]
    for f in files:
        row = {c: "" for c in INDEX_COLUMNS}
        row.update(
            family=f.family,
            suite=f.suite,
            file=f.file,
            instance_id=f.instance_id,
            name=f.name,
            generator=f.generator,
        )
        prev = best.get((f.family, f.instance_id))
        if prev is not None:
            row.update({c: prev[c] for c in _BEST_COLUMNS})
        rows.append(row)
    write_index(root, rows)
    return files


def read_index(root: str | Path) -> list[dict[str, str]]:
    """Rows of ``index.csv``; a clear one-line :class:`InstanceError` when it is not one."""
    path = Path(root) / INDEX_NAME
    text = read_text(path, cap=MAX_CSV_BYTES, what="library index")  # regular files only
    reader = csv.DictReader(io.StringIO(text))
    if tuple(reader.fieldnames or ()) != INDEX_COLUMNS:
        raise InstanceError(
            f"{path}: header {reader.fieldnames!r} is not the library index header "
            f"{','.join(INDEX_COLUMNS)}"
        )
    rows = []
    for lineno, row in enumerate(reader, start=2):
        if None in row or any(v is None for v in row.values()):
            raise InstanceError(f"{path}, line {lineno}: expected {len(INDEX_COLUMNS)} fields")
        for col in ("best_objective", "best_bound"):
            if row[col] and not _is_number(row[col]):
                raise InstanceError(f"{path}, line {lineno}: {col} = {row[col]!r}: not a number")
        rows.append(row)
    return rows


def _is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def write_index(root: str | Path, rows: list[dict[str, str]]) -> None:
    rows = sorted(rows, key=lambda r: (r["family"], r["suite"], r["file"]))
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=INDEX_COLUMNS, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    Path(root).mkdir(parents=True, exist_ok=True)
    write_text(Path(root) / INDEX_NAME, buf.getvalue(), "library index")


def verify(
    root: str | Path,
    families: Sequence[str] | None = None,
    suites: Sequence[str] = SUITE_NAMES,
) -> list[str]:
    """Problems with the library under ``root``, one line each (empty: all good).

    Checks that every file the suites generate is there byte for byte, that no
    other instance file sits in those suites, that every instance file of any
    family loads, and that the index lists exactly the files with consistent
    best-known values (best proven bound not above the best known objective).
    """
    root = Path(root)
    problems: list[str] = []
    files = expected_files(families, suites)
    for f in files:
        path = root / f.file
        if not path.exists():
            problems.append(f"{path}: missing (run 'energyopt instances generate')")
        elif path.read_bytes() != f.text.encode():
            problems.append(f"{path}: differs from what {f.generator} generates")
    expected = {f.file for f in files}
    on_disk = []
    for family in FAMILY_MODULES:
        for path in sorted((root / family).glob("*/*.json")):
            rel = path.relative_to(root).as_posix()
            on_disk.append(rel)
            if families and family not in families:
                continue
            try:
                inst = load_instance_file(path)
            except InstanceError as exc:
                problems.append(str(exc))
                continue
            if inst.family != family:
                problems.append(f"{path}: a {inst.family!r} instance under {family}/")
            suite = path.parent.name
            generated = {(f.family, f.suite) for f in files}
            if (family, suite) in generated and rel not in expected:
                problems.append(f"{path}: not generated by energyopt.{family}.suites (stale?)")
    if not (root / INDEX_NAME).exists():
        problems.append(f"{root / INDEX_NAME}: missing")
        return problems
    try:
        rows = read_index(root)
    except InstanceError as exc:
        return [*problems, str(exc)]
    listed = {r["file"]: r for r in rows}
    for rel in on_disk:
        if rel not in listed:
            problems.append(f"{root / INDEX_NAME}: does not list {rel}")
    by_file = {f.file: f for f in files}
    for rel, row in listed.items():
        if rel not in on_disk:
            problems.append(f"{root / INDEX_NAME}: lists {rel}, which does not exist")
        f = by_file.get(rel)
        if f is not None and (row["instance_id"], row["generator"]) != (f.instance_id, f.generator):
            problems.append(f"{root / INDEX_NAME}: row of {rel} has a stale instance_id/generator")
        if _bound_above_objective(row):
            problems.append(
                f"{root / INDEX_NAME}: {rel}: best_bound {row['best_bound']} above best_objective "
                f"{row['best_objective']} (one of {row['best_bound_method']}, "
                f"{row['best_objective_method']} is wrong)"
            )
    return problems


def gap_distribution(root: str | Path) -> list[str]:
    """Per family and suite, the index's proven gaps: one summary line each.

    Counts the instances with a gap, without an objective, and without a useful
    bound (never folded into the statistics), and gives the gaps' quartiles.
    """
    groups: dict[tuple[str, str], list[dict[str, str]]] = {}
    for r in read_index(root):
        groups.setdefault((r["family"], r["suite"]), []).append(r)
    lines = []
    for (family, suite), rows in sorted(groups.items()):
        pairs = [(_num(r["best_objective"]), _num(r["best_bound"])) for r in rows]
        pairs = [(o, b if _useful(b, o) else None) for o, b in pairs]
        gaps = sorted(g for g in (gap(o, b) for o, b in pairs) if g is not None)
        no_obj = sum(1 for o, _ in pairs if o is None)
        no_bound = sum(1 for o, b in pairs if o is not None and b is None)
        line = f"{family}/{suite}: {len(rows)} instances, {len(gaps)} with a proven gap"
        if gaps:
            q = [gaps[min(len(gaps) - 1, int(p * len(gaps)))] for p in (0.25, 0.5, 0.75)]
            closed = sum(1 for g in gaps if g <= 1e-4)
            line += (
                f" (closed {closed}; quartiles {100 * q[0]:.3g} / {100 * q[1]:.3g} / "
                f"{100 * q[2]:.3g} %, max {100 * gaps[-1]:.3g} %)"
            )
        line += f", {no_bound} with no useful bound, {no_obj} unsolved"
        lines.append(line)
    return lines


def _bound_above_objective(row: dict[str, str]) -> bool:
    """An index row whose best proven bound lies above its best objective (a bug somewhere)."""
    if not (row["best_objective"] and row["best_bound"]):
        return False
    obj, bnd = float(row["best_objective"]), float(row["best_bound"])
    return bnd > obj + BOUND_RTOL * max(abs(obj), 1.0) + GAP_ABS_TOL


def update_index(root: str | Path, stores: Sequence[str | Path]) -> tuple[int, list[str]]:
    """Take the best objective and best proven bound per instance from results stores.

    Returns
    -------
    (int, list of str)
        How many index rows improved, and contradictions: a proven bound above a
        known objective, a bug in one of the two methods. The rows of contradicted
        instances are left as they were; the others are written.
    """
    root = Path(root)
    rows = read_index(root)
    by_id: dict[tuple[str, str], list[dict[str, str]]] = {}
    for r in rows:
        by_id.setdefault((r["family"], r["instance_id"]), []).append(r)
    proposed = [dict(r) for r in rows]
    index_of = {id(r): i for i, r in enumerate(rows)}
    for store_path in stores:
        with ResultsStore(store_path) as store:
            for cell in store.rows(
                [
                    "family",
                    "instance_id",
                    "method",
                    "seed",
                    "status",
                    "objective",
                    "bound",
                    "run_id",
                ]
            ):
                for r in by_id.get((cell["family"], cell["instance_id"]), []):
                    new = proposed[index_of[id(r)]]
                    run = f"{cell['run_id']}/seed={cell['seed']}"
                    if cell["status"] in ("optimal", "feasible") and cell["objective"] is not None:
                        if _better(cell["objective"], new["best_objective"], smaller=True):
                            new.update(
                                best_objective=repr(float(cell["objective"])),
                                best_objective_method=cell["method"],
                                best_objective_run=run,
                            )
                    if _useful(cell["bound"], cell["objective"]) and _better(
                        cell["bound"], new["best_bound"], smaller=False
                    ):
                        new.update(
                            best_bound=repr(float(cell["bound"])),
                            best_bound_method=cell["method"],
                            best_bound_run=run,
                        )
    conflicts, changed = [], 0
    for i, new in enumerate(proposed):
        if new["best_bound"] and not _useful(float(new["best_bound"]), _num(new["best_objective"])):
            # Rows written before the rule: a bound <= 0 below a positive objective.
            new.update(best_bound="", best_bound_method="", best_bound_run="")
        if _bound_above_objective(new):
            conflicts.append(
                f"{new['file']}: proven bound {new['best_bound']} ({new['best_bound_method']}, "
                f"{new['best_bound_run']}) above objective {new['best_objective']} "
                f"({new['best_objective_method']}, {new['best_objective_run']})"
            )
            continue
        if new != rows[i]:
            rows[i] = new
            changed += 1
    write_index(root, rows)
    return changed, conflicts


def _useful(bound: float | None, objective: float | None) -> bool:
    """Whether a bound says anything: every family's objective is nonnegative, so a
    bound <= 0 below a positive objective is no bound (``core.scoring.useful_bound``)."""
    return bound is not None and (bound > 0 or objective == 0)


def _num(text: str) -> float | None:
    return float(text) if text else None


def _better(value: Any, current: str, *, smaller: bool) -> bool:
    if current == "":
        return True
    value, cur = float(value), float(current)
    return value < cur if smaller else value > cur
