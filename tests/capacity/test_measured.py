"""Capacity points whose jobs' epoch times and GPU power come from the Zeus traces."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from energyopt.capacity.measured import (
    DATA,
    epoch_table,
    measured_tables,
    one_gpu_time,
    trace_types,
)
from energyopt.capacity.suites import measured_points


def test_interpolation_by_hand() -> None:
    by_batch = {32: 10.0, 128: 40.0}
    assert one_gpu_time(by_batch, 32) == 10.0
    # 64 lies halfway between 32 and 128 in log: the geometric mean, sqrt(10 x 40) = 20
    assert one_gpu_time(by_batch, 64) == pytest.approx(20.0)
    assert one_gpu_time(by_batch, 16) is None and one_gpu_time(by_batch, 256) is None


def test_epoch_table_by_hand() -> None:
    table = epoch_table({64: 8.0, 128: 10.0, 256: 16.0}, 256, 5)
    # g = 1: 16 s; g = 2: t1(128) x (1 + 0.05) = 10.5; g = 4: t1(64) x (1 + 0.1) = 8.8;
    # g = 3: t1(85.3), log-log between 64 and 128, x (1 + 0.05 log2 3);
    # g = 5: 51.2 is below the smallest measured batch: the table stops at 4
    w = math.log(256 / 3 / 64) / math.log(2)
    t3 = math.exp((1 - w) * math.log(8.0) + w * math.log(10.0)) * (1 + 0.05 * math.log2(3))
    assert table == pytest.approx((16.0, 10.5, t3, 8.8))


@pytest.mark.skipif(not trace_types(), reason="../shared/data absent")
def test_gpu_power_and_times_are_the_traces() -> None:
    times, power = measured_tables()
    for gpu, path in trace_types().items():
        with open(path, newline="") as fh:
            rows = list(csv.DictReader(fh))
        top = max(int(r["power_limit"]) for r in rows)
        at_top = [r for r in rows if int(r["power_limit"]) == top]
        mean = sum(float(r["average_power"]) for r in at_top) / len(at_top)
        assert power[gpu] == pytest.approx(mean)
        for r in at_top:
            w = f"{r['dataset']}/{r['network']}"
            several = len({x["optimizer"] for x in at_top if x["network"] == r["network"]}) > 1
            key = (f"{w} ({r['optimizer']})" if several else w, gpu)
            assert times[key][int(r["batch_size"])] == pytest.approx(float(r["time_per_epoch"]))


def test_measured_points_from_data_or_library(tmp_path: Path) -> None:
    stored = measured_points(tmp_path)
    assert [p.name for p in stored] == [
        f"measured-n{n}-point{k}" for n in (10, 50) for k in (50, 100, 150)
    ]
    assert all("Apache-2.0" in p.source and p.source.startswith("measured") for p in stored)
    if trace_types(DATA):
        assert [p.to_dict() for p in measured_points()] == [p.to_dict() for p in stored]
