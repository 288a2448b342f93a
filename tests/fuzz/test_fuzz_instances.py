"""Generated hostile variants of real instance files of every family, via the Python API.

Each variant is either refused with an :class:`InstanceError` (a ``ValueError``) whose
message is one line naming the file and a field, or accepted without losing anything:
``to_dict()`` of what was read gives back every value of the file, with the same type
(a bool read as 1, ``2.5`` read as 2, ``"64"`` read as 64 or an unknown key dropped
are silent acceptances, and fail). Seeds are fixed: the same variants every run.
"""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path

import pytest
from fuzzutil import (
    check_message,
    keys_of,
    lossless,
    mutate_document,
    mutate_text,
    to_text,
)

from energyopt.core.errors import InstanceError
from energyopt.core.instance import load_instance

ROOT = Path(__file__).resolve().parents[2]
INSTANCES = ROOT / "instances"
#: Per family, a small file of each suite: every family's fields, quick to read.
FILES = {
    "pipeline": [
        "smoke/000-synthetic-1f1b-2x2-k3-seed0.json",
        "smoke/001-random-dag-n6-k3-seed0.json",
        "paper/006-gpt3-175b-a100-1f1b-8x12-t1.json",
    ],
    "capacity": ["smoke/000-random-point-0.json", "paper/000-paper-s1-n10-point50.json"],
    "powercap": ["smoke/000-random-event-j3-g8x4-eta0-5-seed1.json"],
    "tuning": ["smoke/000-synthetic-1.json", "paper/003-imagenet-resnet50.json"],
}
DOCUMENT_MUTATIONS = 70  # per family
TEXT_MUTATIONS = 10  # per family
#: Documented sentinels that ``to_dict`` writes resolved: (family, field, value).
SENTINELS = {("tuning", "recurrences", 0)}


def _load(path: Path):
    try:
        return load_instance(path), None
    except InstanceError as exc:
        return None, str(exc)


def _variants(family: str, count: int, seed: int):
    rng = random.Random(f"{family}-{seed}")
    for k in range(count):
        name = FILES[family][k % len(FILES[family])]
        doc = json.loads((INSTANCES / family / name).read_text())
        yield name, doc, rng


@pytest.mark.parametrize("family", sorted(FILES))
def test_document_mutations_are_refused_clearly_or_read_losslessly(family, tmp_path):
    path = tmp_path / "variant.json"
    refused = 0
    for name, doc, rng in _variants(family, DOCUMENT_MUTATIONS, 0):
        label, mutated, mpath = mutate_document(doc, rng)
        label = f"{family}/{name}: {label}"
        path.write_text(to_text(mutated))
        inst, message = _load(path)
        if message is not None:
            refused += 1
            check_message(message, str(path), keys_of(doc), label)
            continue
        if _is_sentinel(family, mpath, mutated):
            continue
        lost = lossless(mutated, inst.to_dict())
        assert lost is None, f"{label}: accepted, but {lost}"
    assert refused > DOCUMENT_MUTATIONS // 2  # the generator does produce hostile input


def _is_sentinel(family, mpath, mutated) -> bool:
    """A top-level field set to its documented sentinel (same type and value)."""
    if len(mpath) != 1:
        return False
    value = _value(mutated, mpath)
    return any(
        (family, mpath[0]) == (f, k) and type(value) is type(v) and value == v
        for f, k, v in SENTINELS
    )


def _value(doc, path):
    try:
        for k in path:
            doc = doc[k]
    except (KeyError, IndexError, TypeError):
        return None
    return doc


@pytest.mark.parametrize("family", sorted(FILES))
def test_text_mutations_are_refused_in_one_line(family, tmp_path):
    path = tmp_path / "variant.json"
    for name, doc, rng in _variants(family, TEXT_MUTATIONS, 1):
        label, text = mutate_text(to_text(doc), rng)
        label = f"{family}/{name}: {label}"
        path.write_bytes(text.encode("utf-8", "surrogateescape"))
        _, message = _load(path)
        assert message is not None, f"{label}: accepted"
        check_message(message, str(path), keys_of(doc), label)


def _first_named_list(doc):
    for key, value in doc.items():
        if isinstance(value, list) and value and isinstance(value[0], dict) and "name" in value[0]:
            return key
    return None


@pytest.mark.parametrize(
    "family, name",
    [(f, n) for f in ("capacity", "powercap") for n in FILES[f]],
)
def test_duplicated_names_are_refused(family, name, tmp_path):
    doc = json.loads((INSTANCES / family / name).read_text())
    key = _first_named_list(doc)
    other = copy.deepcopy(doc[key][0])
    doc[key].append(other)
    path = tmp_path / "dup.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InstanceError, match=rf"{key}.*name.*appears more than once|duplicate"):
        load_instance(path)


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda d: d.update(version=99), "version"),
        (lambda d: d.update(version="x"), "version"),
        (lambda d: d.update(version=True), "version"),
        (lambda d: d.update(name={"x": 1}), "name"),
    ],
)
@pytest.mark.parametrize("family", sorted(FILES))
def test_version_and_name_types_are_checked_in_every_family(family, edit, field, tmp_path):
    doc = json.loads((INSTANCES / family / FILES[family][0]).read_text())
    edit(doc)
    path = tmp_path / "v.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InstanceError, match=rf"^{path}: {field}"):
        load_instance(path)


def test_issue_13_examples(tmp_path):
    """The silent acceptances issue 13 lists, one by one."""
    pipe = json.loads((INSTANCES / "pipeline" / FILES["pipeline"][1]).read_text())
    sched = json.loads((INSTANCES / "pipeline" / FILES["pipeline"][0]).read_text())
    cap = json.loads((INSTANCES / "capacity" / FILES["capacity"][0]).read_text())
    tun = json.loads((INSTANCES / "tuning" / FILES["tuning"][0]).read_text())
    table = next(iter(pipe["tables"]))
    cases = [
        (pipe, lambda d: d.update(edges={}), r"edges = \{\}: must be a list"),
        (pipe, lambda d: d["edges"].__setitem__(0, [0.5, 1]), r"edges\[0\]\[0\] = 0.5"),
        (pipe, lambda d: d["tables"][table]["sm_clock_mhz"].__setitem__(0, 1410.7), "1410.7"),
        (pipe, lambda d: d.update(p_blocking_w=True), "p_blocking_w = True"),
        (sched, lambda d: d.update(num_microbatches=2.5), "num_microbatches = 2.5"),
        (sched, lambda d: d.update(num_stages=10**9), "num_stages"),
        (sched, lambda d: d.update(num_microbatches=10**8), "num_microbatches"),
        (sched, lambda d: d.update(num_stages=10**400), "num_stages"),
        (cap, lambda d: d.update(pue=0), "pue = 0"),
        (cap, lambda d: d["jobs"][0].update(remaining_epochs=True), "remaining_epochs = True"),
        (tun, lambda d: d.update(recurrences=2.5), "recurrences = 2.5"),
        (tun, lambda d: d.update(max_epochs=1.5), "max_epochs = 1.5"),
        (tun, lambda d: d.update(default_batch_size="64"), "default_batch_size = '64'"),
        (tun, lambda d: d["batch_sizes"].__setitem__(0, 2.5), r"batch_sizes\[0\] = 2.5"),
        (tun, lambda d: d.update(family=["tuning"]), "family"),
    ]
    path = tmp_path / "case.json"
    for doc, edit, match in cases:
        d = copy.deepcopy(doc)
        edit(d)
        path.write_text(json.dumps(d))
        with pytest.raises(InstanceError, match=match):
            load_instance(path)
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(InstanceError, match="nested too deeply"):
        load_instance(path)
