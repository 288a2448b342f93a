"""PowerFlow's job performance model fitted to measured power-limit profiles.

PowerFlow (Section 4) fits, per job, the iteration time as a function of the GPU
count and the SM clock (Eq. 3: ``T_grad = alpha + (beta + kappa / f) * bs``) and the
power, and schedules with those fits. The published measurements here set the
**power limit**, not the clock: the Zeus NSDI'23 power traces (seconds per epoch and
mean watts per batch size and limit, one GPU) and ZeusMonitor windows of Zeus's JIT
optimizer (one job at 1 or 4 GPUs, one unknown batch size), or any profile in the
project's schema with knob ``power_limit_w`` (``energyopt profile --knob
power_limit_w``, ``--import zeus-trace``, ``--import zeus-monitor``).

The model keeps Eq. 3 and replaces the clock by the clock fraction a power limit
allows (formulations note below), all per GPU, per unit of work (an epoch of the
trace, a window of a ZeusMonitor log, an operation of a sweep):

* power demand at full clock ``D(b) = d0 + d1 ln b`` (the log-of-batch shape of
  PowerFlow Eq. 12); mean power ``P(p, b) = min(c p, D(b))``;
* clock fraction ``x(p, b) = 1`` when ``p >= D(b)``, else
  ``((p - s) / (D(b) - s)) ** gamma`` (``s`` the power that does not scale with the
  clock; dynamic power grows faster than linearly in the clock, so ``gamma < 1``);
* time ``t(p, b) = A / b + B + K / x(p, b)`` (Eq. 3 summed over an epoch of N samples:
  ``A = N alpha``, ``B = N beta``, ``K = N kappa / f_max``).

Fit errors are reported as in PowerFlow's Table 2: MAPE of the throughput ``1 / t``
and of the energy ``n P t`` on held-out rows, here by 10-fold cross-validation (each
row predicted by a fit to the other 90 %), so that a 9-row ZeusMonitor profile is not
judged on one row. GPU counts the profile did not measure come from
:mod:`energyopt.profiles.scaling` (an assumption, stated there).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from energyopt.core.instance import InstanceError
from energyopt.profiles.scaling import data_parallel_factor

if TYPE_CHECKING:  # pandas comes with the profile; a method never needs it
    import pandas as pd

#: Parameter names: power model, then time model.
POWER_PARAMS = ("d0", "d1", "c")
TIME_PARAMS = ("A", "B", "K", "s", "gamma")
#: Folds of the cross-validated fit error (Table 2 fits on 90 % and tests on 10 %).
FOLDS = 10
#: Fewest rows a fit accepts (8 parameters).
MIN_ROWS = 6


@dataclasses.dataclass(frozen=True)
class PowerLimitModel:
    """Fitted time and power of one job over the power limit (see the module).

    ``measured_gpus`` is the GPU count of the profile; :meth:`iteration` carries a
    one-GPU fit to other counts (:mod:`energyopt.profiles.scaling`) and refuses any
    other count for a fit made at several GPUs.
    """

    workload: str
    gpu: str
    params: Mapping[str, float]
    measured_gpus: int
    unit: str
    source: str = ""

    def clock_fraction(self, power_limit_w: Any, batch: Any) -> np.ndarray:
        q = self.params
        p = np.asarray(power_limit_w, float)
        demand = _demand(q, batch)
        s = min(q["s"], 0.999 * float(np.min(demand)))
        frac = np.clip((p - s) / np.maximum(demand - s, 1e-9), 1e-3, None) ** q["gamma"]
        return np.where(p >= demand, 1.0, np.minimum(frac, 1.0))

    def unit_time_s(self, power_limit_w: Any, batch: Any) -> np.ndarray:
        """Seconds of one unit of work at the measured GPU count."""
        q = self.params
        b = np.asarray(batch, float)
        return q["A"] / b + q["B"] + q["K"] / self.clock_fraction(power_limit_w, b)

    def power_w(self, power_limit_w: Any, batch: Any) -> np.ndarray:
        """Mean power of one GPU."""
        p = np.asarray(power_limit_w, float)
        return np.minimum(self.params["c"] * p, _demand(self.params, batch))

    def iteration(
        self, num_gpus: Any, sm_clock_mhz: Any, global_batch_size: Any
    ) -> tuple[np.ndarray, np.ndarray]:
        """(seconds, joules of all GPUs) of one unit of work; the setting is a power limit.

        The parameter keeps the :class:`~energyopt.powercap.instance.IterationModel`
        name; here it is the power limit in watts.
        """
        n = np.asarray(num_gpus, float)
        b = np.asarray(global_batch_size, float)
        if self.measured_gpus != 1:
            if np.any(n != self.measured_gpus):
                raise ValueError(
                    f"{self.workload}: measured on {self.measured_gpus} GPUs only "
                    "(the work of its windows is not known at other counts)"
                )
            t = self.unit_time_s(sm_clock_mhz, b)
            return t, n * self.power_w(sm_clock_mhz, b) * t
        local = b / n
        factor = np.vectorize(data_parallel_factor)(n)
        t = self.unit_time_s(sm_clock_mhz, local) * factor
        return t, n * self.power_w(sm_clock_mhz, local) * t


def _demand(q: Mapping[str, float], batch: Any) -> np.ndarray:
    return q["d0"] + q["d1"] * np.log(np.maximum(np.asarray(batch, float), 1.0))


@dataclasses.dataclass(frozen=True)
class MeasuredFit:
    """One job's fitted model and its Table 2 errors (fractions: 0.05 = 5 %)."""

    model: PowerLimitModel
    rows: int
    throughput_mape: float
    energy_mape: float
    train_throughput_mape: float
    train_energy_mape: float


@dataclasses.dataclass(frozen=True)
class _Rows:
    p: np.ndarray  # power limit, W
    b: np.ndarray  # per-GPU batch (1 when the profile does not say)
    t: np.ndarray  # seconds per unit of work
    w: np.ndarray  # mean power per GPU, W

    def take(self, idx: np.ndarray) -> _Rows:
        return _Rows(self.p[idx], self.b[idx], self.t[idx], self.w[idx])


def _fit_power(r: _Rows) -> dict[str, float]:
    from scipy.optimize import least_squares  # SciPy only where a model is fitted

    lb = np.log(np.maximum(r.b, 1.0))
    top = r.w[r.p >= np.max(r.p)]
    d0 = float(np.max(top)) if len(top) else float(np.max(r.w))

    def resid(theta: np.ndarray) -> np.ndarray:
        d0_, d1_, c_ = theta
        return np.minimum(c_ * r.p, d0_ + d1_ * lb) / r.w - 1.0

    lo, hi = [1.0, -1e3, 0.5], [1e4, 1e3, 1.5]
    theta0 = np.clip([d0, 0.0, 1.0], np.add(lo, 1e-6), np.subtract(hi, 1e-6))
    sol = least_squares(resid, theta0, bounds=(lo, hi), max_nfev=2000)
    return dict(zip(POWER_PARAMS, sol.x.tolist()))


def _fit_time(r: _Rows, power: dict[str, float], pmin: float) -> dict[str, float]:
    """The time parameters; ``s`` stays below ``pmin``, the lowest limit of the job's grid
    (measured or not in this fold), so that no limit of the grid is predicted stalled."""
    from scipy.optimize import least_squares  # see _fit_power

    def model(theta: np.ndarray) -> PowerLimitModel:
        q = {**power, **dict(zip(TIME_PARAMS, theta.tolist()))}
        return PowerLimitModel("", "", q, 1, "")

    def resid(theta: np.ndarray) -> np.ndarray:
        return model(theta).unit_time_s(r.p, r.b) / r.t - 1.0

    # Start: the fastest rows at full clock, least squares of t = A/b + B + K.
    a = np.column_stack([1.0 / r.b, np.ones_like(r.b)])
    coef, *_ = np.linalg.lstsq(a / r.t[:, None], np.ones_like(r.t), rcond=None)
    a0, b0 = max(float(coef[0]), 0.0), max(float(coef[1]), 1e-6)
    lo = [0.0, 0.0, 0.0, 0.0, 0.1]
    hi = [1e9, 1e9, 1e9, 0.8 * pmin, 3.0]
    theta0 = np.clip(
        [a0, 0.5 * b0, 0.5 * b0, 0.3 * pmin, 0.5], np.add(lo, 1e-9), np.subtract(hi, 1e-9)
    )
    sol = least_squares(resid, theta0, bounds=(lo, hi), x_scale="jac", max_nfev=4000)
    return dict(zip(TIME_PARAMS, sol.x.tolist()))


def _fit(r: _Rows, pmin: float) -> dict[str, float]:
    power = _fit_power(r)
    return {**power, **_fit_time(r, power, pmin)}


def _errors(q: Mapping[str, float], r: _Rows) -> tuple[np.ndarray, np.ndarray]:
    """Predicted (seconds, watts) of rows ``r`` under parameters ``q``."""
    m = PowerLimitModel("", "", q, 1, "")
    return m.unit_time_s(r.p, r.b), m.power_w(r.p, r.b)


def _mape(pred: np.ndarray, meas: np.ndarray) -> float:
    return float(np.mean(np.abs(pred - meas) / np.abs(meas)))


def fit_power_limit_profile(
    df: pd.DataFrame,
    *,
    workload: str | None = None,
    seed: int = 0,
    folds: int = FOLDS,
    where: str = "profile",
) -> MeasuredFit:
    """Fit one job of a power-limit profile and measure its error as in Table 2.

    Parameters
    ----------
    df
        A profile (``energyopt.profiles.schema``) with knob ``power_limit_w``: rows of
        one workload at one GPU count, ``time_s``/``energy_j`` per unit of work
        (energy of all its GPUs), ``batch_size`` the per-GPU batch (0 when unknown).
        Rows with several operations at one (limit, batch) are summed into one unit.
    workload
        Which workload; may be omitted when the profile holds one.
    seed
        Seed of the fold assignment.
    folds
        Folds of the cross-validation (at most one per row); 0 skips it, and the
        held-out MAPE is then NaN.

    Returns
    -------
    MeasuredFit
        The model fitted to every row, and its ``folds``-fold cross-validated MAPE.
    """
    workload, rows, gpus = _job_rows(df, workload, where)
    pmin = float(np.min(rows.p))
    q = _fit(rows, pmin)
    fold = np.random.default_rng(seed).permutation(len(rows.t)) % max(1, min(folds, len(rows.t)))
    pt, pw = np.full_like(rows.t, np.nan), np.full_like(rows.t, np.nan)
    for k in range(int(fold.max()) + 1 if folds > 0 else 0):
        test = fold == k
        qk = _fit(rows.take(np.flatnonzero(~test)), pmin)
        pt[test], pw[test] = _errors(qk, rows.take(np.flatnonzero(test)))
    ft, fw = _errors(q, rows)
    model = PowerLimitModel(
        workload,
        str(df["gpu"].iloc[0]),
        q,
        gpus,
        str(df["operation"].iloc[0]) if df["operation"].nunique() == 1 else "iteration",
        f"fitted to measurements: {df.attrs.get('file', where)} ({df['source'].iloc[0]})",
    )
    return MeasuredFit(
        model,
        len(rows.t),
        _mape(1.0 / pt, 1.0 / rows.t),
        _mape(pw * pt, rows.w * rows.t),
        _mape(1.0 / ft, 1.0 / rows.t),
        _mape(fw * ft, rows.w * rows.t),
    )


def _job_rows(df: pd.DataFrame, workload: str | None, where: str) -> tuple[str, _Rows, int]:
    """The rows of one job: (workload, arrays per (limit, batch), GPU count)."""
    if set(df["knob"]) != {"power_limit_w"}:
        raise InstanceError(f"{where}: knob = {sorted(set(df['knob']))}: need power_limit_w")
    names = sorted(df["workload"].unique())
    if workload is None:
        if len(names) != 1:
            raise InstanceError(f"{where}: workload not given and the profile holds {names}")
        workload = names[0]
    d = df[df["workload"] == workload]
    if d.empty:
        raise InstanceError(f"{where}: workload = {workload!r}: not in the profile ({names})")
    gpus = d["num_gpus"] if "num_gpus" in d.columns else None
    counts = {1} if gpus is None else {int(v) for v in gpus.fillna(1)}
    if len(counts) != 1:
        raise InstanceError(
            f"{where}: workload {workload!r} was measured at {sorted(counts)} GPUs: fit one count"
        )
    n = counts.pop()
    if "optimizer" in d.columns and d["optimizer"].nunique() > 1:
        raise InstanceError(
            f"{where}: workload {workload!r} has rows of several optimizers "
            f"({', '.join(sorted(map(str, d['optimizer'].unique())))}): fit one (split_jobs)"
        )
    # Repeated rows of one operation are one measurement each (mean); the operations
    # of one (limit, batch) together are one unit of work (sum).
    keys = ["knob_value", "batch_size"]
    g = d.groupby([*keys, "operation"])[["time_s", "energy_j"]].mean().groupby(keys).sum()
    if len(g) < MIN_ROWS:
        raise InstanceError(
            f"{where}: workload {workload!r} has {len(g)} (limit, batch) points; "
            f"the fit needs at least {MIN_ROWS}"
        )
    p = g.index.get_level_values(0).to_numpy(float)
    b = np.maximum(g.index.get_level_values(1).to_numpy(float), 1.0)
    t, e = g["time_s"].to_numpy(float), g["energy_j"].to_numpy(float)
    if not (np.all(t > 0) and np.all(e > 0)):
        raise InstanceError(f"{where}: workload {workload!r}: times and energies must be > 0")
    return workload, _Rows(p, b, t, e / t / n), n


def split_jobs(df: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """The profile's jobs: one per workload, and per optimizer where a workload has several
    (the V100 trace measures shufflenetv2 with adadelta and with adam)."""
    out = []
    for w in sorted(df["workload"].unique()):
        d = df[df["workload"] == w]
        opts = sorted(map(str, d["optimizer"].unique())) if "optimizer" in d.columns else []
        if len(opts) <= 1:
            out.append((str(w), d))
            continue
        out += [(f"{w} ({o})", d[d["optimizer"] == o]) for o in opts]
    return out


def fit_table(fits: Mapping[str, MeasuredFit]) -> list[dict[str, Any]]:
    """Table 2 rows: per job its rows and cross-validated MAPE (fractions)."""
    return [
        {
            "job": name,
            "gpu": f.model.gpu,
            "gpus": f.model.measured_gpus,
            "rows": f.rows,
            "throughput_mape": f.throughput_mape,
            "energy_mape": f.energy_mape,
            "train_throughput_mape": f.train_throughput_mape,
            "train_energy_mape": f.train_energy_mape,
        }
        for name, f in fits.items()
    ]


def format_fit_table(rows: list[dict[str, Any]]) -> str:
    """The Table 2 rows as a Markdown table (percentages)."""
    out = [
        "| job | GPU | GPUs | rows | throughput MAPE | energy MAPE | (fit rows: thr. / en.) |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        out.append(
            f"| {r['job']} | {r['gpu']} | {r['gpus']} | {r['rows']} | "
            f"{100 * r['throughput_mape']:.1f} % | {100 * r['energy_mape']:.1f} % | "
            f"{100 * r['train_throughput_mape']:.1f} % / {100 * r['train_energy_mape']:.1f} % |"
        )
    return "\n".join(out)
