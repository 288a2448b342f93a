"""Sweeps over locked SM clocks or power limits, measuring a user's step function.

The public API:

- :class:`restored_settings` — a context manager that records the GPU's power
  limit on entry and, on every exit path (normal end, exception, Ctrl-C, SIGTERM,
  SIGHUP), resets the locked SM clock and puts the power limit back, each on its
  own. Signals arriving *during* the restore are held until the restore is done.
- :func:`measure` — time and energy of one step, averaged over a window of
  ``iterations`` steps (and at least ``seconds``) after ``warmup`` steps.
- :func:`sweep` — for each knob value: apply it, measure each operation, and
  return a profile in the schema of :mod:`energyopt.profiles.schema`.

NVML cannot report whether the SM clock was locked before the sweep, so
"restoring" the clock means resetting it to the driver's default (unlocked)
behaviour, what ``nvidia-smi -rgc`` does.
"""

from __future__ import annotations

import datetime as _dt
import math
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

import pandas as pd

from energyopt.core.instance import InstanceError
from energyopt.profiles.device import DeviceInfo, GpuDevice, GpuError, GpuNotSupportedError
from energyopt.profiles.schema import KNOBS, profile_row, validate_profile

Step = Callable[[], Any]


class Terminated(SystemExit):
    """SIGTERM or SIGHUP arrived during a sweep: raised so that the GPU is restored.

    A ``SystemExit`` with status ``128 + signal number`` (143 for SIGTERM, 129 for
    SIGHUP), what a shell reports for a process the signal ended.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(128 + signum)
        self.signum = signum

    def __str__(self) -> str:
        return f"stopped by {signal.Signals(self.signum).name}"


#: Signals that end a sweep early and restore the GPU first (SIGINT is Ctrl-C, which
#: Python already raises as KeyboardInterrupt).
TERMINATING_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)
)

#: Signals held while the GPU is restored.
HELD_SIGNALS = (signal.SIGINT, *TERMINATING_SIGNALS)


class restored_settings:
    """Apply SM-clock and power-limit settings, and restore them on every exit.

    >>> with restored_settings(device) as gpu:       # doctest: +SKIP
    ...     gpu.lock_sm_clock(1200)
    ...     train_step()

    Every exit path restores: a normal end, an exception, Ctrl-C, and (in the main
    thread) SIGTERM and SIGHUP, which raise :class:`Terminated` inside the block while
    it runs; the previous handlers are back in place after it. Only what was changed is
    restored (resetting needs the same privileges as setting), each setting on its own:
    a failure or an interruption while resetting the clock does not skip the power
    limit. Signals arriving *during* the restore, or as it starts, are held (blocked in
    the kernel, then re-raised) until it is done. What could
    not be restored is named with the ``nvidia-smi`` command that restores it by hand:
    raised as :class:`GpuError` after a normal end, printed to stderr when another
    exception is already propagating.
    """

    def __init__(self, device: GpuDevice) -> None:
        self.device = device
        self.original_power_limit_w: float | None = None
        self.clock_locked = False
        self.power_limit_changed = False
        self._previous_handlers: dict[int, Any] = {}
        self._pending: int | None = None
        self._mask: set[int] | None = None

    def __enter__(self) -> restored_settings:
        try:
            self.original_power_limit_w = self.device.power_limit_w()
        except GpuNotSupportedError:
            self.original_power_limit_w = None  # no power management: limits cannot change
        self._pending, self._mask = None, None
        # Ctrl-C only while Python's own handler has it (a program that ignores or
        # handles it keeps its choice).
        ctrl_c = signal.getsignal(signal.SIGINT) is signal.default_int_handler
        signums = HELD_SIGNALS if ctrl_c else TERMINATING_SIGNALS
        self._previous_handlers = _install(signums, self._on_signal)
        return self

    def _on_signal(self, signum: int, frame: Any) -> None:
        """Ctrl-C, SIGTERM or SIGHUP: end the block, and hold any later one until the
        GPU is restored.

        The signals are blocked in the kernel first, so a second one waits. One that
        lands as ``__exit__`` starts (its frame is on the stack) raises nothing: the
        restore runs first and ``__exit__`` re-raises it after.
        """
        self._block()
        if _exiting(frame, self):
            self._pending = self._pending or signum
            return
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise Terminated(signum)

    def _block(self) -> None:
        """Block the held signals in the kernel (main thread; once per exit)."""
        if self._mask is None and _can_mask():
            self._mask = signal.pthread_sigmask(signal.SIG_BLOCK, HELD_SIGNALS)

    def _unblock(self) -> None:
        """Put the signal mask back; a signal that came meanwhile is delivered now."""
        if self._mask is not None:
            mask, self._mask = self._mask, None
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)

    def lock_sm_clock(self, mhz: int) -> None:
        # marked before the call: a call that fails half-way must still be undone
        self.clock_locked = True
        self.device.lock_sm_clock(mhz)

    def set_power_limit_w(self, watts: float) -> None:
        if self.original_power_limit_w is None:
            raise GpuNotSupportedError(
                f"{self.device.info.name}: the power limit cannot be read, so it will not be "
                "changed (it could not be restored)"
            )
        self.power_limit_changed = True
        self.device.set_power_limit_w(watts)

    def apply(self, knob: str, value: float) -> None:
        if knob == "sm_clock_mhz":
            self.lock_sm_clock(int(value))
        elif knob == "power_limit_w":
            self.set_power_limit_w(float(value))
        else:
            raise ValueError(f"knob = {knob!r}: expected one of {KNOBS}")

    def _undo_steps(self) -> list[tuple[str, Callable[[], Any], str, str]]:
        """(what, undo, nvidia-smi command, flag) of each change still in place."""
        index = self.device.info.index
        steps: list[tuple[str, Callable[[], Any], str, str]] = []
        if self.clock_locked:
            steps.append(
                (
                    "resetting the SM clock",
                    self.device.reset_sm_clock,
                    f"nvidia-smi -i {index} -rgc",
                    "clock_locked",
                )
            )
        if self.power_limit_changed and self.original_power_limit_w is not None:
            watts = self.original_power_limit_w
            steps.append(
                (
                    f"restoring the power limit to {watts:g} W",
                    lambda: self.device.set_power_limit_w(watts),
                    f"nvidia-smi -i {index} -pl {watts:g}",
                    "power_limit_changed",
                )
            )
        return steps

    def restore(self) -> list[str]:
        """Undo the changes; returns the failures (empty when all went back).

        Each change is undone even if undoing another one failed or was interrupted
        (``KeyboardInterrupt``, ``SystemExit``); the first interruption is re-raised
        once every change was tried, after a warning naming what was not restored.
        """
        failures: list[str] = []
        interruption: BaseException | None = None
        for what, undo, command, flag in self._undo_steps():
            try:
                undo()
            except Exception as exc:
                failures.append(f"{what} failed ({exc}); run `{command}`")
                continue
            except BaseException as exc:  # KeyboardInterrupt, SystemExit: finish first
                interruption = interruption or exc
                failures.append(f"{what} was interrupted; run `{command}`")
                continue
            setattr(self, flag, False)
        if interruption is not None:
            print(f"energyopt: warning: not restored: {'; '.join(failures)}", file=sys.stderr)
            raise interruption
        return failures

    def __exit__(self, exc_type: type | None, exc: BaseException | None, tb: Any) -> None:
        self._block()  # before anything else: no signal may cut the restore short
        try:
            with _signals_held() as held:
                try:
                    failures = self.restore()
                finally:
                    self._unblock()  # what was blocked reaches the holding handler
        finally:
            _restore_handlers(self._previous_handlers)
            self._previous_handlers = {}
        if held.pending is None and self._pending is not None:
            held.pending = self._pending  # it came as __exit__ started
        self._pending = None
        if isinstance(exc, Terminated) and not failures:
            print(f"energyopt: {exc}; the GPU settings were restored", file=sys.stderr)
        if failures:
            message = "not restored: " + "; ".join(failures)
            if exc_type is None:
                raise GpuError(message)
            print(f"energyopt: warning: {message}", file=sys.stderr)
        interrupted = exc_type is not None and issubclass(exc_type, KeyboardInterrupt | SystemExit)
        if held.pending is not None and not interrupted:
            held.raise_pending()  # a signal that came during the restore still ends the run


def _exiting(frame: Any, guard: restored_settings) -> bool:
    """Whether ``guard.__exit__`` is on the stack of ``frame`` (the restore has begun)."""
    code = restored_settings.__exit__.__code__
    while frame is not None:
        if frame.f_code is code and frame.f_locals.get("self") is guard:
            return True
        frame = frame.f_back
    return False


def _can_mask() -> bool:
    return hasattr(signal, "pthread_sigmask") and (
        threading.current_thread() is threading.main_thread()
    )


def _install(signums: Iterable[int], handler: Callable[[int, Any], None]) -> dict[int, Any]:
    """Install ``handler`` for ``signums`` (main thread only); the previous handlers."""
    previous: dict[int, Any] = {}
    if threading.current_thread() is not threading.main_thread():
        return previous  # Python delivers signals to the main thread only
    for signum in signums:
        try:
            previous[signum] = signal.signal(signum, handler)
        except (ValueError, OSError):  # e.g. no signal support in this interpreter
            pass
    return previous


def _restore_handlers(previous: Mapping[int, Any]) -> None:
    for signum, handler in previous.items():
        # None: the previous handler was not set from Python; fall back to the default
        signal.signal(signum, handler if handler is not None else signal.SIG_DFL)


class _signals_held:
    """Hold Ctrl-C, SIGTERM and SIGHUP while the GPU is restored; re-raise the first after."""

    def __init__(self) -> None:
        self.pending: int | None = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> _signals_held:
        self._previous = _install(HELD_SIGNALS, self._hold)
        return self

    def _hold(self, signum: int, frame: Any) -> None:
        if self.pending is None:
            self.pending = signum

    def __exit__(self, *exc: object) -> None:
        _restore_handlers(self._previous)

    def raise_pending(self) -> None:
        if self.pending == signal.SIGINT:
            raise KeyboardInterrupt
        raise Terminated(self.pending)


def measure(
    device: GpuDevice,
    step: Step,
    *,
    iterations: int = 20,
    seconds: float = 0.0,
    warmup: int = 3,
    synchronize: Callable[[], Any] | None = None,
    sampling_period_s: float = 0.01,
) -> tuple[float, float, int]:
    """Time and energy of one ``step``, averaged over a measured window.

    Runs ``warmup`` steps, then steps until at least ``iterations`` ran and at
    least ``seconds`` passed, calling ``synchronize`` (if given) before reading
    the clock and the energy, so queued GPU work is inside the window.

    Returns
    -------
    (time_s, energy_j, n)
        Seconds and joules per step, and the number of steps measured.
    """
    if iterations < 1:
        raise ValueError(f"iterations = {iterations!r}: must be >= 1")
    if not (math.isfinite(seconds) and seconds >= 0):
        raise ValueError(f"seconds = {seconds!r}: must be a finite number >= 0")
    if warmup < 0:
        raise ValueError(f"warmup = {warmup!r}: must be >= 0")
    for _ in range(warmup):
        step()
    if synchronize is not None:
        synchronize()
    meter = device.meter(sampling_period_s)
    meter.start()
    t0 = device.now()
    t1: float | None = None
    n = 0
    try:
        while n < iterations or device.now() - t0 < seconds:
            step()
            n += 1
            if n >= iterations and synchronize is not None and seconds > 0:
                synchronize()
        if synchronize is not None:
            synchronize()
        t1 = device.now()
    finally:
        # also stops a sampling thread on the way out of an exception
        energy = meter.stop(t0, t1)
    elapsed = t1 - t0
    return elapsed / n, energy / n, n


def sweep(
    device: GpuDevice,
    steps: Step | Mapping[str, Step],
    knob: str,
    values: Iterable[float],
    *,
    workload: str = "custom",
    batch_size: int = 0,
    stage: int | None = None,
    iterations: int = 20,
    seconds: float = 0.0,
    warmup: int = 3,
    synchronize: Callable[[], Any] | None = None,
    sampling_period_s: float = 0.01,
    progress: Callable[[str], None] | None = None,
) -> pd.DataFrame:
    """Profile ``steps`` at each value of ``knob``; the GPU is restored afterwards.

    Parameters
    ----------
    device
        An :class:`~energyopt.profiles.nvml.NvmlDevice` or a
        :class:`~energyopt.profiles.simulated.SimulatedGpu`.
    steps
        A zero-argument step function (operation ``iteration``) or a mapping
        from operation name (``forward``, ``backward``, ...) to step function.
    knob, values
        ``sm_clock_mhz`` (each value must be a supported clock) or
        ``power_limit_w`` (within the GPU's range).
    workload, batch_size, stage
        Recorded in every row (``stage`` only when given).
    iterations, seconds, warmup, synchronize, sampling_period_s
        As in :func:`measure`.

    Returns
    -------
    pandas.DataFrame
        A validated profile, one row per (value, operation). ``attrs`` holds the
        GPU name, UUID, driver version, collection date (UTC), the energy method
        and, when power was sampled, ``sampling_period_s``.
    """
    ops: dict[str, Step] = dict(steps) if isinstance(steps, Mapping) else {"iteration": steps}
    if not ops:
        raise ValueError("steps: no operation to measure")
    values = _check_values(device, knob, list(values))
    info = device.info
    _refuse_mig(info)
    window = _Window(iterations, seconds, warmup, synchronize, sampling_period_s)
    energy_method = device.meter(sampling_period_s).method
    record = _RowLabels(knob, workload, batch_size, stage)
    rows = []
    started = _dt.datetime.now(_dt.timezone.utc)
    # Every knob change happens inside restored_settings: it resets the clock and puts
    # the power limit back on every way out of this block (exception, Ctrl-C, signal).
    with restored_settings(device) as guard:
        original_limit = guard.original_power_limit_w
        for value in values:
            guard.apply(knob, value)
            for op, fn in ops.items():
                rows.append(_measured_row(device, info, fn, value, op, record, window, progress))
    df = validate_profile(pd.DataFrame(rows), f"sweep of {info.name}")
    df.attrs.update(
        _sweep_attrs(device, info, record, window, started, energy_method, original_limit)
    )
    if hasattr(device, "metadata"):
        df.attrs.update(device.metadata())
    return df


class _Window(NamedTuple):
    """The measurement window of :func:`measure`, the same for every row of a sweep."""

    iterations: int
    seconds: float
    warmup: int
    synchronize: Callable[[], Any] | None
    sampling_period_s: float


class _RowLabels(NamedTuple):
    """What a sweep records in every row besides the measurement."""

    knob: str
    workload: str
    batch_size: int
    stage: int | None


def _refuse_mig(info: DeviceInfo) -> None:
    """A MIG-enabled GPU shares its energy, clocks and power limit: refuse to profile it."""
    if info.mig_enabled:
        raise GpuError(
            f"GPU {info.index} ({info.name}) has MIG enabled: energy, power, clocks and the "
            "power limit belong to the whole GPU and are shared by every MIG instance, so a "
            f"profile would mix workloads; disable MIG (`nvidia-smi -i {info.index} -mig 0`, "
            "as root) or profile another GPU"
        )


def _measured_row(
    device: GpuDevice,
    info: DeviceInfo,
    fn: Step,
    value: float,
    op: str,
    record: _RowLabels,
    window: _Window,
    progress: Callable[[str], None] | None,
) -> dict[str, Any]:
    """Measure one operation at the knob value already applied; its profile row."""
    t, e, n = measure(device, fn, **window._asdict())
    row = profile_row(
        gpu=info.name,
        knob=record.knob,
        knob_value=value,
        workload=record.workload,
        operation=op,
        batch_size=int(record.batch_size),
        time_s=t,
        energy_j=e,
        samples=n,
        source=getattr(device, "source", info.backend),
    )
    if record.stage is not None:
        row["stage"] = int(record.stage)
    if progress is not None:
        progress(f"{record.knob}={value:g} {op}: {t * 1e3:.3f} ms, {e:.4g} J ({n} iterations)")
    return row


def _sweep_attrs(
    device: GpuDevice,
    info: DeviceInfo,
    record: _RowLabels,
    window: _Window,
    started: _dt.datetime,
    energy_method: str,
    original_limit: float,
) -> dict[str, Any]:
    """The profile's provenance: the GPU, the date, the window and the restored limit."""
    return {
        "gpu": info.name,
        "gpu_uuid": info.uuid,
        "gpu_index": info.index,
        "driver_version": info.driver_version,
        "backend": info.backend,
        "source": getattr(device, "source", info.backend),
        "collected_at": started.isoformat(timespec="seconds"),
        "knob": record.knob,
        "workload": record.workload,
        "warmup_iterations": window.warmup,
        "min_iterations": window.iterations,
        "min_seconds": window.seconds,
        "energy_method": energy_method,
        "sampling_period_s": (
            window.sampling_period_s if energy_method == "power-sampling" else None
        ),
        "original_power_limit_w": original_limit,
        "settings_restored": True,
    }


def _check_values(device: GpuDevice, knob: str, values: list[float]) -> list[float]:
    info = device.info
    if knob not in KNOBS:
        raise InstanceError(f"knob = {knob!r}: expected one of {', '.join(KNOBS)}")
    if not values:
        raise InstanceError(f"{knob}: no values to sweep")
    out: list[float] = []
    for v in values:
        if not (isinstance(v, (int, float)) and math.isfinite(v)):
            raise InstanceError(f"{knob} = {v!r}: not a finite number")
        if knob == "sm_clock_mhz":
            clocks = info.supported_sm_clocks_mhz
            if v != int(v) or v <= 0:
                raise InstanceError(f"sm_clock_mhz = {v!r}: must be a positive whole number")
            if clocks and int(v) not in clocks:
                near = min(clocks, key=lambda c: abs(c - v))
                raise InstanceError(
                    f"sm_clock_mhz = {v:g}: not a supported SM clock of {info.name} "
                    f"({min(clocks)}-{max(clocks)} MHz, {len(clocks)} clocks; nearest {near})"
                )
            out.append(int(v))
        else:
            if math.isnan(info.power_limit_max_w):
                raise InstanceError(
                    f"power_limit_w: {info.name} does not expose power management through NVML"
                )
            if not info.power_limit_min_w <= v <= info.power_limit_max_w:
                raise InstanceError(
                    f"power_limit_w = {v:g}: outside the power-limit range of {info.name} "
                    f"({info.power_limit_min_w:g}-{info.power_limit_max_w:g} W)"
                )
            out.append(float(v))
    return out


def clock_grid(
    device: GpuDevice, step_mhz: float | None = None, count: int | None = None
) -> list[int]:
    """Supported SM clocks, fastest first, thinned to ``step_mhz`` apart or to ``count`` clocks."""
    clocks = list(device.info.supported_sm_clocks_mhz)
    if not clocks:
        raise GpuError(f"{device.info.name}: the driver reports no supported SM clocks")
    if count is not None:
        if count < 1:
            raise ValueError(f"count = {count!r}: must be >= 1")
        if count >= len(clocks):
            return clocks
        if count == 1:
            return clocks[:1]
        idx = sorted({round(k * (len(clocks) - 1) / (count - 1)) for k in range(count)})
        return [clocks[i] for i in idx]
    if step_mhz is None:
        return clocks
    out = [clocks[0]]
    for c in clocks[1:]:
        if out[-1] - c >= step_mhz - 1e-9:
            out.append(c)
    return out


def power_limit_grid(device: GpuDevice, step_w: float = 25.0) -> list[float]:
    """Power limits from the maximum down to the minimum, ``step_w`` apart."""
    info = device.info
    if not step_w > 0:
        raise ValueError(f"step_w = {step_w!r}: must be positive")
    out, p = [], info.power_limit_max_w
    while p >= info.power_limit_min_w - 1e-9:
        out.append(round(p, 3))
        p -= step_w
    return out
