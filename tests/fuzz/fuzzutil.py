"""Generated mutations of valid JSON documents, CSV files and text, and the oracles.

A mutation takes a valid document and a seeded ``random.Random`` and returns the hostile
variant together with a label (what it did, at which path) that a failing test prints.
The kinds follow issue 13: type swaps, booleans for numbers, huge integers, NaN and
infinity, fractions in integer fields, deletions, duplicated names, deep nesting and
truncation.
"""

from __future__ import annotations

import copy
import json
import math
import random
import re
from collections.abc import Callable
from typing import Any

Path_ = tuple[Any, ...]

#: Replacement values for a leaf, by kind.
HUGE_INT = 10**400
DEEP = 100_000


def paths(doc: Any, prefix: Path_ = ()) -> list[Path_]:
    """Every path (keys and indices) from the root to a value inside ``doc``."""
    out = [prefix] if prefix else []
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.extend(paths(v, (*prefix, k)))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out.extend(paths(v, (*prefix, i)))
    return out


def pick_path(doc: Any, rng: random.Random) -> Path_:
    """A random path, biased towards shallow fields (each level stops with p = 0.4)."""
    path: Path_ = ()
    node = doc
    while isinstance(node, dict | list) and node:
        keys = list(node.keys()) if isinstance(node, dict) else list(range(len(node)))
        if isinstance(node, list) and len(keys) > 3:
            keys = [0, 1, len(keys) - 1]  # first, second and last element
        key = rng.choice(keys)
        path, node = (*path, key), node[key]
        if not isinstance(node, dict | list) or rng.random() < 0.4:
            break
    return path


def get(doc: Any, path: Path_) -> Any:
    for k in path:
        doc = doc[k]
    return doc


def put(doc: Any, path: Path_, value: Any) -> None:
    get(doc, path[:-1])[path[-1]] = value


def _leaf_value(value: Any, rng: random.Random) -> tuple[str, Any]:
    """A hostile replacement of ``value``: (kind, new value)."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    kinds: list[tuple[str, Callable[[], Any]]] = [
        ("true", lambda: True),
        ("false", lambda: False),
        ("null", lambda: None),
        ("object", lambda: {"x": 1}),
        ("empty list", lambda: []),
        ("string", lambda: "x"),
        ("huge int", lambda: HUGE_INT),
        ("-huge int", lambda: -HUGE_INT),
        ("nan", lambda: math.nan),
        ("inf", lambda: math.inf),
        ("-inf", lambda: -math.inf),
        ("'NaN' text", lambda: "NaN"),
        ("'inf' text", lambda: "inf"),
    ]
    if number:
        kinds += [
            ("as text", lambda: str(value)),
            ("fraction", lambda: value + 0.5),
            ("negative", lambda: -value - 1),
            ("zero", lambda: 0),
            ("1e9", lambda: 10**9),
            ("1e15", lambda: 1e15),
            ("list of it", lambda: [value]),
        ]
    elif isinstance(value, str):
        kinds += [("number for text", lambda: 64), ("empty text", lambda: "")]
    elif isinstance(value, list):
        kinds += [
            ("object for list", lambda: {}),
            ("truncated list", lambda: value[: len(value) // 2]),
            ("list of null", lambda: [None] * max(1, len(value))),
        ]
    elif isinstance(value, dict):
        kinds += [("list for object", lambda: []), ("empty object", lambda: {})]
    kind, make = rng.choice(kinds)
    return kind, make()


def mutate_document(doc: dict[str, Any], rng: random.Random) -> tuple[str, Any, Path_]:
    """One structural or value mutation of ``doc``: (label, mutated copy, path)."""
    out = copy.deepcopy(doc)
    path = pick_path(out, rng)
    if not path:
        return "whole document -> []", [], ()
    parent = get(out, path[:-1])
    action = rng.random()
    if action < 0.15 and isinstance(parent, dict):
        del parent[path[-1]]
        return f"delete {_show(path)}", out, path
    if action < 0.22 and isinstance(parent, dict):
        parent[path[-1] + "_typo"] = parent.pop(path[-1])
        return f"rename {_show(path)} (unknown key)", out, path
    if action < 0.32 and isinstance(parent, list):
        parent.append(copy.deepcopy(parent[path[-1]]))
        return f"duplicate {_show(path)}", out, path
    kind, value = _leaf_value(get(out, path), rng)
    put(out, path, value)
    return f"{_show(path)} -> {kind}", out, path


def to_text(doc: Any) -> str:
    """JSON text of ``doc``; NaN and infinity as Python's json writes them."""
    return json.dumps(doc)


def mutate_text(text: str, rng: random.Random) -> tuple[str, str]:
    """A text-level mutation: truncation, deep nesting, a stray byte, a huge literal."""
    kind = rng.randrange(5)
    if kind == 0:
        cut = rng.randrange(1, max(2, len(text) - 1))
        return f"truncated at {cut}", text[:cut]
    if kind == 1:
        return "100,000-deep nesting", text[:-1] + ', "deep": ' + "[" * DEEP + "]" * DEEP + "}"
    if kind == 2:
        return "deep nesting as the whole file", "[" * DEEP + "]" * DEEP
    if kind == 3:
        at = rng.randrange(len(text))
        return f"byte 0xff at {at}", text[:at] + "\udcff" + text[at:]
    digits = "9" * 400
    return "400-digit literal for the first number", _replace_first_number(text, digits)


def _replace_first_number(text: str, literal: str) -> str:
    for i, ch in enumerate(text):
        if ch.isdigit() and text[i - 1] in ": [,":
            j = i
            while j < len(text) and (text[j].isdigit() or text[j] in ".eE+-"):
                j += 1
            return text[:i] + literal + text[j:]
    return text


def _show(path: Path_) -> str:
    return "".join(f"[{k!r}]" if isinstance(k, str) else f"[{k}]" for k in path)


# -- the oracle for an accepted mutation -------------------------------------------------


def lossless(original: Any, read_back: Any, path: str = "") -> str | None:
    """Where ``read_back`` (``to_dict()`` of what was accepted) lost part of ``original``.

    Numbers compare by value (``2`` equals ``2.0``) but a bool is not a number and a
    string is not a number; lists compare element by element; every key of
    ``original`` must be kept with an equal value (``read_back`` may add defaults).
    Returns ``None`` when nothing was lost.
    """
    if isinstance(original, bool) or isinstance(read_back, bool):
        same = type(original) is type(read_back) and original == read_back
        return None if same else f"{path or 'root'}: {original!r} read as {read_back!r}"
    if isinstance(original, int | float) and isinstance(read_back, int | float):
        if original == read_back:
            return None
        return f"{path or 'root'}: {original!r} read as {read_back!r}"
    if isinstance(original, dict) and isinstance(read_back, dict):
        for k, v in original.items():
            if k not in read_back:
                return f"{path}.{k}: dropped"
            where = lossless(v, read_back[k], f"{path}.{k}")
            if where:
                return where
        return None
    if isinstance(original, list | tuple) and isinstance(read_back, list | tuple):
        if len(original) != len(read_back):
            return f"{path}: {len(original)} items read as {len(read_back)}"
        for i, (a, b) in enumerate(zip(original, read_back)):
            where = lossless(a, b, f"{path}[{i}]")
            if where:
                return where
        return None
    if original == read_back and type(original) is type(read_back):
        return None
    return f"{path or 'root'}: {original!r:.60} read as {read_back!r:.60}"


# -- the oracle for a refused input ------------------------------------------------------

#: Phrases of raw Python messages: an error that says one of these names no field.
RAW_PYTHON = re.compile(
    r"object is not|argument must be|invalid literal|could not convert|cannot convert|"
    r"too large to convert|indices must be|not subscriptable|unhashable|has no attribute|"
    r"takes \d+ positional|unexpected keyword|NoneType|Traceback"
)

#: Errors about the file as a whole, which name no field because there is none yet.
WHOLE_FILE = re.compile(
    r"not valid JSON|nested too deeply|not a text file|expected a JSON object|cannot read|"
    r"field 'family'|no rows|missing column|cannot read as CSV|"
    # core/files.py: what the file is, before any field is read
    r"not a regular|not text|not UTF-8 text|header|more than \d+ rows|MiB, the most|not CSV"
)


def keys_of(doc: Any) -> set[str]:
    """Every object key anywhere in ``doc``."""
    out: set[str] = set()
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.add(str(k))
            out |= keys_of(v)
    elif isinstance(doc, list):
        for v in doc:
            out |= keys_of(v)
    return out


def check_message(message: str, where: str, fields: set[str], label: str) -> None:
    """A refusal must be one short line naming the file and a field (or the whole file)."""
    assert "\n" not in message, f"{label}: message on several lines: {message[:300]!r}"
    assert len(message) <= 500, f"{label}: message of {len(message)} characters"
    assert where in message, f"{label}: message does not name the file: {message!r}"
    assert not RAW_PYTHON.search(message), f"{label}: raw Python message: {message!r}"
    named = any(f in message for f in fields) or WHOLE_FILE.search(message)
    assert named, f"{label}: message names no field: {message!r}"


# -- CSV files ---------------------------------------------------------------------------


def csv_text(header: list[str], rows: list[list[Any]]) -> str:
    lines = [",".join(header)]
    lines += [",".join("" if v is None else str(v) for v in row) for row in rows]
    return "\n".join(lines) + "\n"


def mutate_csv(
    header: list[str],
    rows: list[list[Any]],
    invalid: dict[str, list[str]],
    rng: random.Random,
    optional: tuple[str, ...] = (),
) -> tuple[str, str, bool]:
    """One hostile variant of a CSV table: ``(label, text, must_be_refused)``.

    ``invalid`` lists, per column, cell values that are never valid there (a fraction
    in an integer column, ``inf``, a boolean ...): a variant with one of them must be
    refused, and so must one without a column that is not ``optional``. Other variants
    (a repeated or truncated row) may be accepted, but never with a traceback.
    """
    rows = [list(r) for r in rows]
    kind = rng.randrange(8)
    if kind <= 3:
        col = rng.choice(sorted(invalid))
        r = rng.randrange(len(rows))
        value = rng.choice(invalid[col])
        rows[r][header.index(col)] = value
        return f"row {r + 2}: {col} = {value!r}", csv_text(header, rows), True
    if kind == 4:
        col = rng.randrange(len(header))
        name = header[col]
        rows = [r[:col] + r[col + 1 :] for r in rows]
        text = csv_text(header[:col] + header[col + 1 :], rows)
        return f"column {name} deleted", text, name not in optional
    if kind == 5:
        r = rng.randrange(len(rows))
        rows.insert(r, list(rows[r]))
        return f"row {r + 2} repeated", csv_text(header, rows), False
    if kind == 6:
        text = csv_text(header, rows)
        cut = rng.randrange(1, len(text))
        return f"truncated at {cut}", text[:cut], False
    junk = rng.choice(["x" * 150_000, "a,b\n1,2,3,4,5,6\n", "", "\x00\xff" * 50, '"unclosed,1\n'])
    return f"junk file ({len(junk)} characters)", junk, True


#: One smoke instance per family, with a method that solves it at once.
SMOKE_FILES = {
    "pipeline": ("instances/pipeline/smoke/001-random-dag-n6-k3-seed0.json", "envpipe"),
    "capacity": ("instances/capacity/smoke/000-random-point-0-work-conserving.json", "fifo"),
    "powercap": ("instances/powercap/smoke/000-random-event-j3-g8x4-eta0-5-seed1.json", "greedy"),
    "tuning": ("instances/tuning/smoke/000-synthetic-1.json", "default"),
}
