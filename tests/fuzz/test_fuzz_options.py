"""Method options on the command line, drawn from the published declarations.

For every method of every family, option names are drawn from what ``energyopt
methods --json`` publishes (plus reserved and unknown names) and values from a
hostile pool (wrong types, out of range, boundaries, NaN, huge numbers, valid ones).
Each ``energyopt solve FILE -m METHOD -o NAME=VALUE`` must end either with a one-line
error and exit status 2, or with a normal result (exit status 0). The oracle reads
the published declaration (type, range, choices, null allowed), not the checking
code: a value the declaration allows must run, one it forbids must be refused.
Seeds are fixed: the same draws every run.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

from energyopt.cli import main
from energyopt.core.validate import MAX_COUNT, MAX_MAGNITUDE

ROOT = Path(__file__).resolve().parents[2]
FILES = {
    "pipeline": "instances/pipeline/smoke/000-synthetic-1f1b-2x2-k3-seed0.json",
    "capacity": "instances/capacity/smoke/000-random-point-0-work-conserving.json",
    "powercap": "instances/powercap/smoke/000-random-event-j3-g8x4-eta0-5-seed1.json",
    "tuning": "instances/tuning/smoke/000-synthetic-1.json",
}
DRAWS_PER_METHOD = 4
#: Text after ``-o NAME=``: parsed as JSON when it can be, else kept as text.
POOL = [
    "-1", "0", "1", "2", "2.5", "-5", "1e-9", "1e300", "1e400", "-1e400", "NaN",
    "10000000000000000000000000000000", "true", "false", "null", "x", '"many"', "[1]",
    '{"a": 1}', '""',
]  # fmt: skip
RESERVED = ("seed", "time_limit", "instance")


def declarations(capsys, family: str) -> dict[str, dict[str, Any]]:
    """``energyopt methods FAMILY --json``, by method."""
    assert main(["methods", family, "--json"]) == 0
    return {r["method"]: r for r in json.loads(capsys.readouterr().out)}


def texts_for(decl: dict[str, Any]) -> list[str]:
    """The hostile pool plus the values at and beside the declared range."""
    out = list(POOL)
    for key in ("minimum", "maximum", "above", "below"):
        if key in decl:
            x = decl[key]
            out += [json.dumps(x), json.dumps(x * 2 + 1), json.dumps(x - 1)]
    out += [json.dumps(c) for c in decl.get("choices", [])] + ["NOPE"]
    if decl["default"] is not None:
        out.append(json.dumps(decl["default"]))
    return out


def valid_texts(decl: dict[str, Any]) -> list[str]:
    """Values the declaration allows: the default, the choices, the ends of the range."""
    out = [json.dumps(decl["default"])]
    if decl["nullable"]:
        out.append("null")
    if decl["type"] == "bool":
        out += ["true", "false"]
    out += [json.dumps(c) for c in decl.get("choices", [])]
    out += [json.dumps(decl[k]) for k in ("minimum", "maximum") if k in decl]
    if "above" in decl:
        out.append(json.dumps(decl["above"] + 1))
    if "below" in decl:
        out.append(json.dumps(decl["below"] / 2))
    return out


def allowed(decl: dict[str, Any], value: Any) -> bool | None:
    """Whether the declaration allows ``value``; ``None`` when it cannot say (free text)."""
    if value is None:
        return decl["nullable"]
    kind = decl["type"]
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "str":
        if not isinstance(value, str):
            return False
        return value in decl["choices"] if "choices" in decl else None
    if kind not in ("int", "float"):
        return False  # an object only Python callers can give
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    # Every number option is capped in magnitude (core.validate's counts and magnitudes).
    if not math.isfinite(value) or abs(value) > (MAX_COUNT if kind == "int" else MAX_MAGNITUDE):
        return False
    if kind == "int" and value != int(value):
        return False
    lo, hi, above, below = (decl.get(k) for k in ("minimum", "maximum", "above", "below"))
    return (
        (lo is None or value >= lo)
        and (hi is None or value <= hi)
        and (above is None or value > above)
        and (below is None or value < below)
    )


def parsed(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


@pytest.mark.parametrize("family", sorted(FILES))
def test_drawn_options_give_one_line_errors_or_results(family, capsys):
    rng = random.Random(f"options-{family}")
    path = str(ROOT / FILES[family])
    for method, info in sorted(declarations(capsys, family).items()):
        options = info["options"]
        names = [*options, *RESERVED, "no_such_option"]
        for _ in range(DRAWS_PER_METHOD):
            name = rng.choice(names)
            decl = options.get(name)
            # Half the draws from the values the declaration allows, so that methods run.
            valid = decl is not None and rng.random() < 0.5
            text = rng.choice(valid_texts(decl) if valid else texts_for(decl) if decl else POOL)
            label = f"{family} {method} -o {name}={text}"
            argv = ["solve", path, "-m", method, "-o", f"{name}={text}", "--time-limit", "3"]
            rc = main(argv)
            err = capsys.readouterr().err
            assert "Traceback" not in err, f"{label}: {err}"
            ok = None if decl is None else allowed(decl, parsed(text))
            if decl is None and not info["passes_options_to"]:
                ok = False  # reserved or unknown
            if ok is False or rc == 2:
                assert rc == 2 and ok is not True, f"{label}: exit {rc}; {err[-300:]!r}"
                assert len(err.strip().splitlines()) == 1, f"{label}: {err!r}"
                assert name in err, f"{label}: the error does not name the option: {err!r}"
            else:
                assert rc == 0, f"{label}: exit {rc}; {err[-300:]!r}"
