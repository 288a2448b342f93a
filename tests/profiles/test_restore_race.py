"""A signal that arrives as ``restored_settings.__exit__`` starts still finds the GPU
restored (issue 27: the window before the restore held signals left the clock locked).

The signal is raised from a profile hook at the call of ``__exit__``, so it arrives
before any line of it runs: deterministic, no timing involved.
"""

from __future__ import annotations

import signal
import sys

import pytest

from energyopt.profiles.collector import Terminated, restored_settings
from energyopt.profiles.fake_nvml import FakeGpu, FakeNvml
from energyopt.profiles.nvml import NvmlDevice

ORIGINAL_LIMIT_MW = 350_000


def _signal_at_exit(signum: int):
    """A profile hook that raises ``signum`` once, as ``restored_settings.__exit__`` starts."""
    fired = {"done": False}

    def hook(frame, event, arg):
        if event == "call" and frame.f_code is restored_settings.__exit__.__code__:
            if not fired["done"]:
                fired["done"] = True
                signal.raise_signal(signum)

    return hook, fired


@pytest.mark.parametrize("second", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
@pytest.mark.parametrize("first", [None, signal.SIGTERM])
def test_signal_as_exit_starts_leaves_nothing_locked(first, second) -> None:
    gpu = FakeGpu(power_limit_mw=ORIGINAL_LIMIT_MW)
    fake = FakeNvml([gpu])
    dev = NvmlDevice(0, fake, clock=lambda: gpu.time_s)
    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)}
    hook, fired = _signal_at_exit(second)
    expected = KeyboardInterrupt if (first or second) == signal.SIGINT else Terminated
    with pytest.raises(expected):
        sys.setprofile(hook)
        try:
            with restored_settings(dev) as guard:
                guard.lock_sm_clock(1200)
                guard.set_power_limit_w(200.0)
                if first is not None:
                    signal.raise_signal(first)
        finally:
            sys.setprofile(None)
    assert fired["done"]
    assert gpu.locked_clocks_mhz is None, "the clock was left locked"
    assert gpu.power_limit_mw == ORIGINAL_LIMIT_MW
    assert {s: signal.getsignal(s) for s in before} == before
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    assert not blocked & {signal.SIGTERM, signal.SIGHUP, signal.SIGINT}, blocked
