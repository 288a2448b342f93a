"""formulations/capacity.md and the Pyomo model cite the same equations (CAP-*)."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pyomo.environ as pyo

from energyopt.capacity import milp, thetamodel
from energyopt.capacity.generators import random_point

DOC = Path(__file__).resolve().parents[2] / "formulations" / "capacity.md"
TAG = re.compile(r"\(CAP-(\d+)[a-f]?")

# Tag of each linearized constraint family -> the model components that carry it.
COMPONENTS = {
    "1": ["assignment"],
    "2": ["capacity"],
    "5": ["one_level", "level_is_usage"],
    "6": ["y_le_z", "y_le_theta", "y_ge"],
    "7": ["select_running", "select_one", "none_runs", "theta_lower", "theta_upper"],
    "8": ["postponed_tardiness"],
    "9": ["work_conserving"],
    "10": ["cost"],
}


def test_doc_and_code_cite_the_same_equations():
    doc = {m.group(1) for m in TAG.finditer(DOC.read_text())}
    code = set()
    for _, fn in inspect.getmembers(milp, inspect.isfunction):
        code |= {m.group(1) for m in TAG.finditer(fn.__doc__ or "")}
    assert code == set(COMPONENTS)
    # The patterns method's fixed-theta model (Section 8), one function per family.
    patterns = set()
    for _, fn in inspect.getmembers(thetamodel, inspect.isfunction):
        patterns |= {m.group(1) for m in TAG.finditer(fn.__doc__ or "")}
    assert patterns == {str(k) for k in range(11, 18)}
    # CAP-0 (f_OBJ) is the evaluator's; CAP-3/4 are the MINLP's, replaced by 5-7 and 9.
    assert doc == code | patterns | {"0", "3", "4"}


def test_every_tag_is_a_model_component():
    m = milp.build_model(random_point(1, 2, 3))
    for tag, names in COMPONENTS.items():
        for name in names:
            comp = getattr(m, name, None)
            assert isinstance(comp, (pyo.Constraint, pyo.Objective)), f"CAP-{tag}: {name}"
    free = milp.build_model(random_point(1, 2, 3, work_conserving=False))
    assert not hasattr(free, "work_conserving")
