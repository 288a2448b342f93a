"""power_limit_choice gives what Zeus's own selectors give (zeus/optimizer/power_limit.py)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from energyopt.core.instance import InstanceError
from energyopt.profiles import read_zeus_monitor_log
from energyopt.tuning import parse_selector, power_limit_choice

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "zeus-monitor-profiles"
FILES = sorted(DATA.glob("A40+*.csv")) if DATA.exists() else []
SELECTORS = [
    "energy",
    "time",
    *(f"zeus-cost:{eta}" for eta in (0, 0.25, 0.5, 0.75, 1)),
    *(f"max-slowdown:{f}" for f in (1.05, 1.1, 1.2)),
]
needs_data = pytest.mark.skipif(not FILES, reason="../shared/data absent")


def by_hand(path: Path, selector: str) -> int:
    """Zeus's selectors, computed from the raw CSV with plain Python.

    Measurements in file order; ``min`` keeps the first of equals, as Zeus's does.
    """
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    gpu_cols = [c for c in rows[0] if c.lower().startswith("gpu") and c.lower().endswith("_energy")]
    meas = [
        (
            int(r["window_name"].rsplit("_", 1)[1]),
            sum(float(r[c]) for c in gpu_cols),
            float(r["elapsed_time"]),
        )
        for r in rows
    ]
    name, _, arg = selector.partition(":")
    if name == "energy":
        return min(meas, key=lambda m: m[1])[0]
    if name == "time":
        return min(meas, key=lambda m: m[2])[0]
    if name == "zeus-cost":
        eta = float(arg)
        max_power = max(m[0] for m in meas) * len(gpu_cols)
        costs = {m[0]: eta * m[1] + (1 - eta) * max_power * m[2] for m in meas}
        return min(costs, key=lambda pl: costs[pl])
    top = max(m[0] for m in meas)
    shortest = next(m[2] for m in meas if m[0] == top)
    return min(m[0] for m in meas if m[2] <= float(arg) * shortest)


@needs_data
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_every_selector_on_the_six_a40_profiles(path: Path) -> None:
    frame = read_zeus_monitor_log(path)
    for sel in SELECTORS:
        assert power_limit_choice(path, sel) == by_hand(path, sel), sel
        assert power_limit_choice(frame, sel) == by_hand(path, sel), sel


@needs_data
def test_pinned_by_hand() -> None:
    r18 = DATA / "A40+resnet18+gpu0.csv"
    # energy: 175 W has the least, 1535.36 J (150 W: 1596.59, 200 W: 1805.29)
    assert power_limit_choice(r18, "energy") == 175
    # time: 175 W ran fastest, 9.0135 s, faster than 300 W (9.2169 s): noisy data
    assert power_limit_choice(r18, "time") == 175
    # max-slowdown 1.2: 1.2 x 9.2169 = 11.06 s; 150 W took 10.62 s (ok), 125 W 15.85 s
    assert power_limit_choice(r18, "max-slowdown:1.2") == 150
    # max-slowdown 1.1: 10.14 s; 150 W (10.62 s) is out, 175 W (9.01 s) is in
    assert power_limit_choice(r18, "max-slowdown:1.1") == 175
    r50x4 = DATA / "A40+resnet50+gpu0,1,2,3.csv"
    # zeus-cost 0.5, four GPUs: max_power = 300 x 4 = 1200 W.
    # 150 W: E = 929.934 + 944.442 + 945.117 + 918.854 = 3738.35 J, t = 7.9460 s,
    #   0.5 x 3738.35 + 0.5 x 1200 x 7.9460 = 1869.17 + 4767.63 = 6636.8
    # 100 W: E = 3392.44 J, t = 8.2742 s: 1696.22 + 4964.54 = 6660.8
    # 300 W: E = 4318.74 J, t = 8.2261 s: 2159.37 + 4935.65 = 7095.0
    assert power_limit_choice(r50x4, "zeus-cost:0.5") == 150
    # eta = 1 is energy alone: 100 W (3392.44 J) is the least
    assert power_limit_choice(r50x4, "zeus-cost:1") == 100


def test_ties_go_to_the_first_window_and_max_power_counts_gpus(tmp_path: Path) -> None:
    path = tmp_path / "log.csv"
    path.write_text(
        "start_time,window_name,elapsed_time,gpu0_energy,gpu1_energy\n"
        "0,__GlobalPowerLimitOptimizer_300,10,1000,1000\n"
        "1,__GlobalPowerLimitOptimizer_200,10,1000,1000\n"
        "2,__GlobalPowerLimitOptimizer_100,12,500,500\n"
    )
    # equal energy and time at 300 and 200 W: the first measured (300 W) wins
    assert power_limit_choice(path, "time") == 300
    assert power_limit_choice(path, "energy") == 100
    # eta = 0.5, max_power = 300 x 2 = 600 W: 300 W costs 1000 + 3000 = 4000,
    # 100 W costs 500 + 3600 = 4100; per-GPU max_power (300 W) would pick 100 W
    # (1000 + 1500 = 2500 > 500 + 1800 = 2300)
    assert power_limit_choice(path, "zeus-cost:0.5") == 300
    # max-slowdown 1.2: 12 <= 1.2 x 10 (equality counts)
    assert power_limit_choice(path, "max-slowdown:1.2") == 100
    assert power_limit_choice(path, "max-slowdown:1.19") == 200


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("zeus-cost:1.5", r"ETA must lie in \[0, 1\]"),
        ("zeus-cost:-0.1", r"ETA must lie in \[0, 1\]"),
        ("zeus-cost", "needs a number"),
        ("zeus-cost:nan", "finite"),
        ("max-slowdown:0.9", "FACTOR must be >= 1"),
        ("max-slowdown:x", "needs a number"),
        ("energy:1", "takes no parameter"),
        ("cost", "expected energy, time"),
        (0.5, "must be a string"),
    ],
)
def test_bad_selectors(text: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_selector(text)


def test_frame_must_be_one_power_limit_job(tmp_path: Path) -> None:
    path = tmp_path / "m.csv"
    path.write_text(
        "start_time,window_name,elapsed_time,gpu0_energy\n0,fwd@1410,1,1\n0,bwd@1410,1,1\n"
    )
    frame = read_zeus_monitor_log(path, window_pattern=r"(?P<operation>\w+)@(?P<knob_value>\d+)")
    with pytest.raises(InstanceError, match="power_limit_w"):
        power_limit_choice(frame, "energy")


@settings(max_examples=25, deadline=None)
@given(
    gpus=st.integers(1, 4),
    limits=st.integers(2, 7),
    step=st.sampled_from([10, 25, 50]),
    data=st.data(),
)
def test_random_profiles_against_the_plain_reference(gpus, limits, step, data) -> None:
    """Any profile (ties and noise included): the reader plus the selectors give what the
    plain-Python transcription of Zeus's selectors gives on the raw file."""
    import tempfile

    values = st.sampled_from([1.0, 2.0, 2.5, 3.0, 10.0])  # few values: ties are common
    header = ",".join(f"gpu{i}_energy" for i in range(gpus))
    lines = [f"start_time,window_name,elapsed_time,{header}"]
    for k in range(limits):
        e = ",".join(str(data.draw(values)) for _ in range(gpus))
        lines.append(f"{k},__GlobalPowerLimitOptimizer_{400 - k * step},{data.draw(values)},{e}")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "log.csv"
        path.write_text("\n".join(lines) + "\n")
        for sel in SELECTORS:
            assert power_limit_choice(path, sel) == by_hand(path, sel), sel
