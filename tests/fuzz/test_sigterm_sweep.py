"""Fault injection: SIGTERM / SIGHUP to a process in the middle of a GPU sweep.

A child process runs a sweep against the fake NVML, which appends every call to a log
file as it happens. The parent kills the child with a real signal while it measures,
then replays the log: the SM clock must be unlocked and the power limit back at its
original value, and the child must end with the signal's exit status (128 + signum).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ORIGINAL_LIMIT_MW = 350_000

CHILD = textwrap.dedent(
    """
    import json, sys, time
    from energyopt.profiles.collector import restored_settings, sweep
    from energyopt.profiles.fake_nvml import FakeGpu, FakeNvml
    from energyopt.profiles.nvml import NvmlDevice

    log = open(sys.argv[1], "a", buffering=1)

    class LoggingNvml(FakeNvml):
        def _enter(self, function, *args, needs_init=True):
            log.write(json.dumps([function, [a for a in args if isinstance(a, int)]]) + "\\n")
            super()._enter(function, *args, needs_init=needs_init)

    gpu = FakeGpu(power_limit_mw=ORIGINAL_LIMIT_MW)
    fake = LoggingNvml([gpu])
    dev = NvmlDevice(0, fake, clock=lambda: gpu.time_s)

    def step():
        fake.advance(0.01)
        if gpu.locked_clocks_mhz is not None:
            print("sweeping", flush=True)  # the parent signals once this is seen
        time.sleep(0.02)

    with restored_settings(dev) as guard:
        guard.set_power_limit_w(300.0)
        sweep(dev, step, "sm_clock_mhz", [1410, 1200], iterations=10_000_000)
    """
).replace("ORIGINAL_LIMIT_MW", str(ORIGINAL_LIMIT_MW))


def replay(log: Path) -> tuple[object, int | None, list[str]]:
    """(locked clocks, power limit in mW, function names) after every logged call."""
    locked: object = None
    limit_mw = None
    names = []
    for line in log.read_text().splitlines():
        name, args = json.loads(line)
        names.append(name)
        if name == "nvmlDeviceSetGpuLockedClocks":
            locked = tuple(args)
        elif name == "nvmlDeviceResetGpuLockedClocks":
            locked = None
        elif name == "nvmlDeviceSetPowerManagementLimit":
            limit_mw = args[0]
    return locked, limit_mw, names


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_signal_mid_sweep_restores_clock_and_power_limit(tmp_path: Path, signum: int) -> None:
    log = tmp_path / "nvml.log"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(log)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        line = child.stdout.readline()  # blocks until the sweep measures at a locked clock
        assert line.strip() == "sweeping", child.stderr.read()
        locked, limit_mw, _ = replay(log)
        assert locked == (1410, 1410) and limit_mw == 300_000  # both changed before the kill
        child.send_signal(signum)
        _, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 128 + signum, err
    locked, limit_mw, names = replay(log)
    assert locked is None, f"SM clock left locked; calls: {names[-6:]}"
    assert limit_mw == ORIGINAL_LIMIT_MW, f"power limit left at {limit_mw} mW"
    assert "Traceback" not in err
    assert "GPU settings were restored" in err
