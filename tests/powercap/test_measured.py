"""PowerFlow's model fitted to measured power-limit profiles, and the measured events."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from energyopt.core.instance import InstanceError, load_instance
from energyopt.powercap.instance import PowercapInstance
from energyopt.powercap.measured import PowerLimitModel, fit_power_limit_profile
from energyopt.powercap.measured_suite import LIBRARY, data_available, measured_instances
from energyopt.profiles.schema import profile_row

PARAMS = {"d0": 120.0, "d1": 15.0, "c": 0.98, "A": 400.0, "B": 5.0, "K": 20.0, "s": 60.0}
PARAMS["gamma"] = 0.6


def profile_from(model: PowerLimitModel, limits, batches, *, knob="power_limit_w", gpus=1):
    rows = []
    for p in limits:
        for b in batches:
            t = float(model.unit_time_s(p, b))
            w = float(model.power_w(p, b))
            rows.append(
                profile_row(
                    gpu="G",
                    knob=knob,
                    knob_value=float(p),
                    workload="w",
                    operation="epoch",
                    batch_size=b,
                    time_s=t,
                    energy_j=w * t * gpus,
                    samples=1,
                    source="test",
                    num_gpus=gpus,
                )
            )
    return pd.DataFrame(rows)


def test_fit_recovers_a_model_of_its_own_form() -> None:
    truth = PowerLimitModel("w", "G", PARAMS, 1, "epoch")
    df = profile_from(truth, range(100, 301, 25), (16, 32, 64, 128, 256, 512))
    fit = fit_power_limit_profile(df)
    # noise-free data of the model's own form: the fit reproduces it closely
    assert fit.train_throughput_mape < 0.02 and fit.train_energy_mape < 0.02
    assert fit.throughput_mape < 0.05 and fit.energy_mape < 0.05
    assert fit.rows == 9 * 6 and fit.model.measured_gpus == 1


def test_data_parallel_scaling_by_hand() -> None:
    m = PowerLimitModel("w", "G", PARAMS, 1, "epoch")
    t2, e2 = m.iteration(2.0, 200.0, 256.0)
    # two GPUs at batch 128 each, each doing half the epoch, 5 % overhead for one doubling:
    # t = t1(200 W, 128) / 2 * 1.05; energy = 2 GPUs x P(200 W, 128) x t
    t1 = float(m.unit_time_s(200.0, 128.0))
    assert float(t2) == pytest.approx(t1 / 2 * 1.05)
    assert float(e2) == pytest.approx(2 * float(m.power_w(200.0, 128.0)) * t1 / 2 * 1.05)
    # D(128) = 120 + 15 ln 128 = 192.8 W < 200 W: full clock, power = demand
    assert float(m.power_w(200.0, 128.0)) == pytest.approx(120 + 15 * np.log(128))
    four = PowerLimitModel("w", "G", PARAMS, 4, "window")
    with pytest.raises(ValueError, match="measured on 4 GPUs only"):
        four.iteration(1.0, 200.0, 1.0)


def test_bad_profiles_are_clear_errors() -> None:
    truth = PowerLimitModel("w", "G", PARAMS, 1, "epoch")
    with pytest.raises(InstanceError, match="need power_limit_w"):
        fit_power_limit_profile(
            profile_from(truth, range(100, 301, 25), (32,), knob="sm_clock_mhz")
        )
    with pytest.raises(InstanceError, match="at least 6"):
        fit_power_limit_profile(profile_from(truth, (100, 200, 300), (32,)))
    mixed = pd.concat(
        [
            profile_from(truth, range(100, 301, 25), (32,)),
            profile_from(truth, (100,), (32,), gpus=2),
        ]
    )
    with pytest.raises(InstanceError, match=r"measured at \[1, 2\] GPUs"):
        fit_power_limit_profile(mixed)
    with pytest.raises(InstanceError, match="not in the profile"):
        fit_power_limit_profile(profile_from(truth, range(100, 301, 25), (32,)), workload="x")


def test_knob_field_of_the_instance() -> None:
    inst = load_instance(sorted(LIBRARY.glob("*-measured-*.json"))[0])
    assert inst.knob == "power_limit_w"
    data = inst.to_dict()
    assert PowercapInstance.from_dict(json.loads(json.dumps(data))).to_dict() == data
    data["knob"] = "volts"
    with pytest.raises(InstanceError, match="knob = 'volts'"):
        PowercapInstance.from_dict(data)
    simulated = load_instance(sorted(LIBRARY.glob("*-random-event-*.json"))[0])
    assert simulated.knob == "sm_clock_mhz" and "knob" not in simulated.to_dict()


def test_without_data_the_library_copies_are_read(tmp_path: Path) -> None:
    insts = measured_instances(tmp_path)
    assert [i.name for i in insts] == [
        "measured-v100-j10-g16x8-eta0.5",
        "measured-v100-j10-g16x8-eta0.8",
        "measured-a40-j12-g16x4-eta0.5",
        "measured-a40-j12-g16x4-eta0.8",
    ]
    for inst in insts:
        assert inst.source.startswith("measured:") and "Apache-2.0" in inst.source


@pytest.mark.skipif(not data_available(), reason="../shared/data absent")
def test_measured_events_match_the_library() -> None:
    built = measured_instances()
    stored = measured_instances(Path("/nonexistent-measured-data"))
    assert [b.to_dict() for b in built] == [s.to_dict() for s in stored]
    a40 = built[2]
    # the two ZeusMonitor 4-GPU jobs run on exactly their 4 measured GPUs
    four = [j for j in a40.jobs if "gpu0,1,2,3" in j.name]
    assert len(four) == 2
    assert all(j.min_gpus == 4 and {o.num_gpus for o in j.options} == {4} for j in four)
    assert {o.sm_clock_mhz for o in four[0].options} == set(range(100, 301, 25))


def test_evaluator_names_the_power_limit_unit() -> None:
    from energyopt.powercap.evaluator import PowercapSolution, evaluate

    inst = load_instance(sorted(LIBRARY.glob("*-measured-*.json"))[0])
    config = [(0, 0)] * len(inst.jobs)
    config[0] = (1, 7)  # no job has a 7 W setting
    ev = evaluate(inst, PowercapSolution(tuple(config)))
    assert not ev.feasible
    assert any("(1 GPUs, 7 W) is not one of its options" in v for v in ev.violations)


def test_a_power_limit_sweep_of_energyopt_profile_fits() -> None:
    from energyopt.profiles.collector import sweep
    from energyopt.profiles.simulated import SimulatedGpu

    gpu = SimulatedGpu("a40", seed=0)
    limits = [300.0, 275.0, 250.0, 225.0, 200.0, 175.0, 150.0, 125.0, 100.0]
    df = sweep(gpu, gpu.steps("matmul"), "power_limit_w", limits, iterations=3)
    fit = fit_power_limit_profile(df)
    assert fit.rows == 9
    # a simulated GPU with 1 % noise: the fitted rows are close (a bound, not a pin)
    assert fit.train_throughput_mape < 0.1 and fit.train_energy_mape < 0.1
