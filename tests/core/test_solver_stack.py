"""HiGHS (through highspy and Pyomo) and CP-SAT in one process, loaded in either order.

highspy and ortools each ship a libhighs; with different HiGHS releases, whichever loads
first breaks the other. The project pins highspy to the release that ortools bundles
(README, "HiGHS and OR-Tools in one process"); this test keeps that promise checked.
Each order runs in a fresh interpreter, since the first import decides.
"""

import subprocess
import sys
import textwrap

import pytest

HIGHS = """
import pyomo.environ as pyo
from energyopt.core.highs import solve_with_highs
m = pyo.ConcreteModel()
m.x = pyo.Var(domain=pyo.Binary); m.y = pyo.Var(domain=pyo.Binary)
m.c = pyo.Constraint(expr=m.x + m.y >= 1)
m.o = pyo.Objective(expr=3 * m.x + 2 * m.y)
out = solve_with_highs(m)
assert out.termination.value == "optimal", out
assert abs(out.objective - 2) < 1e-9 and abs(out.bound - 2) < 1e-9, out
import highspy
h = highspy.Highs(); h.setOptionValue("output_flag", False)
"""

CPSAT = """
from ortools.sat.python import cp_model
from energyopt.core.cpsat import solve_with_cpsat
cm = cp_model.CpModel()
a = cm.new_bool_var("a"); b = cm.new_bool_var("b")
cm.add(a + b >= 1); cm.minimize(3 * a + 2 * b)
out, _ = solve_with_cpsat(cm, workers=1)
assert out.termination.value == "optimal" and out.objective == 2 and out.bound == 2, out
"""


@pytest.mark.parametrize(
    "first,second", [(HIGHS, CPSAT), (CPSAT, HIGHS)], ids=["highs-first", "cpsat-first"]
)
def test_highs_and_cpsat_in_one_process(first, second):
    code = textwrap.dedent(first) + textwrap.dedent(second) + "\nprint('ok')\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith("ok")
