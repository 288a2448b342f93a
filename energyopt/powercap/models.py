"""PowerFlow performance models (paper Section 4, Eqs. 1-15) and their SciPy fit.

Throughput: ``T_iter(n, f, bs)`` from ``T_IO`` (Eq. 2), ``T_grad`` (Eq. 3) and
``T_sync`` (Eq. 4) combined with the gamma-overlap rule (Eq. 5); ``tpt = 1/T_iter``
(Eq. 1). Energy: ``E_iter = E_grad + E_sync + E_static`` (Eqs. 6-9) with the
piecewise low/high-frequency powers of Eqs. 12-15 around the breaking clock f_0.

The clock enters the formulas as ``x = f / 1000`` (GHz) so that the cubic terms
of Eqs. 13-14 stay well conditioned; the fitted parameters are in those units.
Where the printed equations are ambiguous, ``formulations/powercap.md`` (PC-1..PC-8)
states the reading used here.

:func:`fit_from_profile` takes any table in the project's profile schema
(``energyopt.profiles.schema``), so NVML profiles can be fitted the same way as the
simulated ones of :mod:`energyopt.powercap.profilegen`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from energyopt.core.instance import InstanceError
from energyopt.profiles.schema import validate_profile

if TYPE_CHECKING:  # pandas is imported where a profile is fitted: no method needs it
    import pandas as pd

#: Names of the throughput parameters (formulations/powercap.md, PC-1..PC-4).
TIME_PARAMS: tuple[str, ...] = (
    "alpha_io",  # Eq. 2
    "beta_io",
    "alpha_grad",  # Eq. 3
    "beta_grad",
    "kappa_grad",
    "alpha_sync_local",  # Eq. 4, one node
    "kappa_sync_local",
    "beta_sync_local",
    "theta_sync_local",
    "alpha_sync_node",  # Eq. 4, several nodes
    "kappa_sync_node",
    "beta_sync_node",
    "theta_sync_node",
    "gamma1",  # Eq. 5
    "gamma2",
)
#: Names of the energy parameters (formulations/powercap.md, PC-5..PC-8).
ENERGY_PARAMS: tuple[str, ...] = (
    "a_lg",  # Eq. 13, low clocks: kappa = a_lg x + b_lg
    "b_lg",
    "theta_lg",  # Eq. 12, low clocks: log(bs + theta_lg) + beta_lg
    "beta_lg",
    "a_hg",  # Eq. 13, high clocks: cubic in x
    "b_hg",
    "c_hg",
    "d_hg",
    "theta_hg",  # Eq. 12, high clocks
    "beta_hg",
    "a_ls",  # Eq. 14, low clocks
    "b_ls",
    "a_hs",  # Eq. 14, high clocks
    "b_hs",
    "c_hs",
    "d_hs",
    "p_static_l",  # Eq. 15
    "c_h",
)

_T_LO = [0, 0, 0, 0, 0, -50, -50, -50, -50, -50, -50, -50, -50, 1.0, 1.0]
_T_HI = [10, 1, 10, 1, 1, 50, 50, 50, 50, 50, 50, 50, 50, 20.0, 20.0]
_E_LO = [-2e3, -2e3, 0.01, -5, -2e3, -2e3, -2e3, -2e3, 0.01, -5, -2e3, -2e3] + [-2e3] * 4 + [0, 0]
_E_HI = [2e3, 2e3, 1e3, 50, 2e3, 2e3, 2e3, 2e3, 1e3, 50, 2e3, 2e3] + [2e3] * 4 + [2e3, 2e3]


def _x(sm_clock_mhz: Any) -> np.ndarray:
    return np.asarray(sm_clock_mhz, dtype=float) / 1000.0


def gpus_on_node(num_gpus: Any, gpus_per_node: int) -> np.ndarray:
    """``r`` of Eq. 2: GPUs of the job on each of its nodes (network packing)."""
    return np.minimum(np.asarray(num_gpus, dtype=float), float(gpus_per_node))


def t_io(p: Mapping[str, float], local_bs: Any, r: Any) -> np.ndarray:
    """Eq. 2: ``T_IO = alpha_IO + beta_IO * bs * r``."""
    return p["alpha_io"] + p["beta_io"] * np.asarray(local_bs, float) * np.asarray(r, float)


def t_grad(p: Mapping[str, float], x: Any, local_bs: Any) -> np.ndarray:
    """Eq. 3: ``T_grad = alpha_grad + (beta_grad + kappa_grad / f) * bs``."""
    return p["alpha_grad"] + (p["beta_grad"] + p["kappa_grad"] / x) * np.asarray(local_bs, float)


def t_sync(p: Mapping[str, float], x: Any, num_gpus: Any, gpus_per_node: int) -> np.ndarray:
    """Eq. 4: zero on one GPU, the ``local`` branch within one node, ``node`` otherwise.

    The paper writes ``n = r`` for "one node"; we read it as ``n <= r`` (all GPUs of
    the job in one node) and use ``beta_sync_node`` in the multi-node branch, where
    the printed equation repeats ``beta_sync_local`` (PC-3).
    """
    n = np.asarray(num_gpus, float)
    x = np.asarray(x, float)
    local = p["alpha_sync_local"] / x + (p["kappa_sync_local"] / x + p["beta_sync_local"]) * (n - 2)
    local = local + p["theta_sync_local"]
    node = p["alpha_sync_node"] / x + (p["kappa_sync_node"] / x + p["beta_sync_node"]) * (n - 2)
    node = node + p["theta_sync_node"]
    out = np.where(n <= gpus_per_node, local, node)
    # Negative times are not physical: a fit may extrapolate below zero far off its data.
    return np.where(n <= 1, 0.0, np.maximum(out, 0.0))


def combine(p: Mapping[str, float], tio: Any, tgrad: Any, tsync: Any) -> np.ndarray:
    """Eq. 5 with the outer exponent read as ``1/gamma2`` (PC-4).

    ``T_iter = ((T_IO^g1 + T_grad^g1)^(g2/g1) + T_sync^g2)^(1/g2)``: the sum of the
    three when ``g1 = g2 = 1``, their maximum as both tend to infinity.
    """
    g1, g2 = p["gamma1"], p["gamma2"]
    tio, tgrad, tsync = (np.maximum(np.asarray(a, float), 0.0) for a in (tio, tgrad, tsync))
    # Scale by the largest term before powering so that gamma up to 20 cannot overflow.
    m = np.maximum(np.maximum(tio, tgrad), np.maximum(tsync, 1e-12))
    inner = ((tio / m) ** g1 + (tgrad / m) ** g1) ** (g2 / g1)
    return m * (inner + (tsync / m) ** g2) ** (1.0 / g2)


def p_grad(
    p: Mapping[str, float], x: Any, local_bs: Any, f0_ghz: float
) -> np.ndarray:  # Eqs. 12-13
    """Eqs. 12-13: ``kappa_grad(f) * (log(bs + theta) + beta)``, low/high branches at f_0.

    The paper's alpha multiplies kappa_grad and cannot be identified apart from it;
    it is fixed to 1 (PC-6).
    """
    x = np.asarray(x, float)
    bs = np.asarray(local_bs, float)
    kappa_l = p["a_lg"] * x + p["b_lg"]
    kappa_h = ((p["a_hg"] * x + p["b_hg"]) * x + p["c_hg"]) * x + p["d_hg"]
    low = kappa_l * (np.log(bs + p["theta_lg"]) + p["beta_lg"])
    high = kappa_h * (np.log(bs + p["theta_hg"]) + p["beta_hg"])
    return np.where(x < f0_ghz, low, high)


def p_sync(p: Mapping[str, float], x: Any, f0_ghz: float) -> np.ndarray:
    """Eq. 14: linear in f below f_0, cubic above."""
    x = np.asarray(x, float)
    low = p["a_ls"] * x + p["b_ls"]
    high = ((p["a_hs"] * x + p["b_hs"]) * x + p["c_hs"]) * x + p["d_hs"]
    return np.where(x < f0_ghz, low, high)


def p_static(p: Mapping[str, float], x: Any, f0_ghz: float) -> np.ndarray:
    """Eq. 15: constant below f_0, ``c_h * f`` above."""
    x = np.asarray(x, float)
    return np.where(x < f0_ghz, p["p_static_l"], p["c_h"] * x)


@dataclasses.dataclass(frozen=True)
class PerformanceModel:
    """Fitted throughput and energy model of one workload on one GPU type.

    Attributes
    ----------
    workload
        Workload name as in the profile.
    time_params, energy_params
        Parameter values by name (:data:`TIME_PARAMS`, :data:`ENERGY_PARAMS`).
    f0_mhz
        Breaking clock between the low- and high-frequency branches (Eqs. 12-15).
    gpus_per_node
        GPUs per node of the profiled cluster (selects the Eq. 4 branch).
    source
        Where the fitted profile came from (``simulated ...`` for synthetic ones).
    """

    workload: str
    time_params: Mapping[str, float]
    energy_params: Mapping[str, float]
    f0_mhz: float
    gpus_per_node: int
    source: str = ""

    def components(
        self, num_gpus: Any, sm_clock_mhz: Any, global_batch_size: Any
    ) -> dict[str, np.ndarray]:
        """T_IO, T_grad, T_sync, T_iter (s) and E_iter (J, all GPUs of the job)."""
        n = np.asarray(num_gpus, float)
        x = _x(sm_clock_mhz)
        bs = np.asarray(global_batch_size, float) / n
        p, q, f0 = self.time_params, self.energy_params, self.f0_mhz / 1000.0
        tio = t_io(p, bs, gpus_on_node(n, self.gpus_per_node))
        tg = np.maximum(t_grad(p, x, bs), 0.0)
        ts = t_sync(p, x, n, self.gpus_per_node)
        ti = combine(p, tio, tg, ts)
        e = n * (p_grad(q, x, bs, f0) * tg + p_sync(q, x, f0) * ts + p_static(q, x, f0) * ti)
        return {"t_io": tio, "t_grad": tg, "t_sync": ts, "time_s": ti, "energy_j": e}

    def iteration(
        self, num_gpus: Any, sm_clock_mhz: Any, global_batch_size: Any
    ) -> tuple[np.ndarray, np.ndarray]:
        """Predicted (seconds, joules) of one training iteration (Eqs. 5 and 6)."""
        c = self.components(num_gpus, sm_clock_mhz, global_batch_size)
        return c["time_s"], c["energy_j"]

    def to_dict(self) -> dict[str, Any]:
        return {
            "workload": self.workload,
            "f0_mhz": self.f0_mhz,
            "gpus_per_node": self.gpus_per_node,
            "time_params": dict(self.time_params),
            "energy_params": dict(self.energy_params),
            "source": self.source,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PerformanceModel:
        return cls(
            str(d["workload"]),
            {k: float(d["time_params"][k]) for k in TIME_PARAMS},
            {k: float(d["energy_params"][k]) for k in ENERGY_PARAMS},
            float(d["f0_mhz"]),
            int(d["gpus_per_node"]),
            str(d.get("source", "")),
        )


@dataclasses.dataclass(frozen=True)
class FitReport:
    """Fit quality of one workload (paper Table 2): MAPE on the held-out rows."""

    workload: str
    model: PerformanceModel
    rows_fit: int
    rows_held_out: int
    time_mape: float
    """Held-out MAPE of the throughput ``1 / T_iter`` (Eq. 1), as in Table 2."""
    energy_mape: float
    train_time_mape: float
    train_energy_mape: float


def mape(predicted: Any, measured: Any) -> float:
    """Mean absolute percentage error, as a fraction (0.05 = 5 %)."""
    pr, me = np.asarray(predicted, float), np.asarray(measured, float)
    return float(np.mean(np.abs(pr - me) / np.abs(me)))


def _prepare(df: pd.DataFrame, where: str) -> pd.DataFrame:
    df = validate_profile(df, where)
    bad = df[df["knob"] != "sm_clock_mhz"]
    if len(bad):
        raise InstanceError(
            f"{where}, row {bad.index[0]}: knob = {bad['knob'].iloc[0]!r}: the PowerFlow "
            "models are fitted over SM clocks (knob 'sm_clock_mhz')"
        )
    if "num_gpus" not in df.columns:
        df = df.assign(num_gpus=1)
    import pandas as pd  # here, not at the top: the package starts without pandas (0.14 s)

    df = df.assign(num_gpus=pd.to_numeric(df["num_gpus"], errors="coerce"))
    for col in ("num_gpus", "batch_size", "time_s", "energy_j"):
        bad = df[~(df[col] > 0)]
        if len(bad):
            raise InstanceError(
                f"{where}, row {bad.index[0]}: {col} = {bad[col].iloc[0]!r}: must be positive "
                "for a PowerFlow fit (batch_size is the global batch of one iteration)"
            )
    return df


def _fit_time(n, x, bs, r, t, gpn) -> tuple[dict[str, float], np.ndarray]:
    def pred(theta):
        p = dict(zip(TIME_PARAMS, theta))
        return combine(p, t_io(p, bs, r), np.maximum(t_grad(p, x, bs), 0), t_sync(p, x, n, gpn))

    def resid(theta):
        return pred(theta) / t - 1.0  # relative residuals: the fit targets MAPE

    # Start from a least-squares fit of Eq. 3 alone on one-GPU rows (T_iter ~ T_grad).
    theta0 = np.array(
        [1e-3, 1e-6, 1e-3, 1e-4, 1e-3, 1e-3, 1e-4, 1e-4, 1e-3, 1e-2, 1e-3, 1e-3, 1e-2, 1.5, 1.5]
    )
    one = n == 1
    if one.sum() >= 3:
        a = np.column_stack([np.ones(one.sum()), bs[one], bs[one] / x[one]])
        coef, *_ = np.linalg.lstsq(a / t[one, None], np.ones(one.sum()), rcond=None)
        coef = np.clip(coef, 0, None)
        theta0[2:5] = coef
    lo, hi = np.array(_T_LO), np.array(_T_HI)
    theta0 = np.clip(theta0, lo + 1e-12, hi - 1e-12)
    # SciPy's optimize (0.17 s) is imported where a model is fitted: no method fits one.
    from scipy.optimize import least_squares

    sol = least_squares(resid, theta0, bounds=(lo, hi), x_scale="jac", max_nfev=4000)
    return dict(zip(TIME_PARAMS, sol.x.tolist())), pred(sol.x)


def _fit_energy(n, x, bs, comps, e, f0) -> dict[str, float]:
    tg, ts, ti = comps

    def resid(theta):
        q = dict(zip(ENERGY_PARAMS, theta))
        pe = n * (p_grad(q, x, bs, f0) * tg + p_sync(q, x, f0) * ts + p_static(q, x, f0) * ti)
        return pe / e - 1.0

    # Start: a flat 100 W of gradient power and 50 W of static power.
    theta0 = np.array([0, 20, 1, 0, 0, 0, 0, 20, 1, 0, 0, 20, 0, 0, 0, 20, 50, 50], dtype=float)
    lo, hi = np.array(_E_LO, float), np.array(_E_HI, float)
    theta0 = np.clip(theta0, lo + 1e-9, hi - 1e-9)
    from scipy.optimize import least_squares  # see _fit_time

    sol = least_squares(resid, theta0, bounds=(lo, hi), x_scale="jac", max_nfev=4000)
    return dict(zip(ENERGY_PARAMS, sol.x.tolist()))


def fit_from_profile(
    df: pd.DataFrame,
    *,
    workload: str | None = None,
    gpus_per_node: int | None = None,
    f0_mhz: float | None = None,
    held_out: float = 0.1,
    seed: int = 0,
    where: str = "profile",
) -> FitReport:
    """Fit Eqs. 1-15 to one workload of a profile by bounded least squares.

    Parameters
    ----------
    df
        A table in the profile schema: ``knob = sm_clock_mhz``, one row per
        (clock, GPU count, global batch size) with ``operation`` one training
        iteration, ``time_s`` its seconds and ``energy_j`` the joules of all its
        GPUs. The optional ``num_gpus`` column gives n (1 when absent);
        ``batch_size`` is the global batch, so the local batch is
        ``batch_size / num_gpus``.
    workload
        Which workload to fit; may be omitted when the table holds only one.
    gpus_per_node
        GPUs per node of the profiled cluster; by default ``df.attrs`` or a
        ``gpus_per_node`` column, else 8.
    f0_mhz
        The breaking clock f_0; by default chosen among the profile's clocks as
        the one with the smallest training error.
    held_out
        Fraction of rows kept out of the fit to measure MAPE (Table 2 uses 0.1).
    seed
        Seed of the random held-out split.
    where
        Name of the source, for error messages.

    Returns
    -------
    FitReport
        The fitted :class:`PerformanceModel` and its held-out MAPE.
    """
    df = _prepare(df, where)
    workload, d = _workload_rows(df, workload, where)
    if gpus_per_node is None:
        gpus_per_node = _profiled_gpus_per_node(d, df)
    if len(d) < 20:
        raise InstanceError(
            f"{where}: workload {workload!r} has {len(d)} rows; the model has "
            f"{len(TIME_PARAMS) + len(ENERGY_PARAMS)} parameters, give at least 20"
        )
    test_idx, train_idx = _held_out_split(len(d), held_out, seed)
    rows = _FitRows.from_frame(d, gpus_per_node)
    train = rows.take(train_idx)
    tp, _ = _fit_time(train.n, train.x, train.bs, train.r, train.t, gpus_per_node)
    candidates = [f0_mhz / 1000.0] if f0_mhz is not None else _f0_candidates(rows.x)
    source = str(d["source"].iloc[0])
    train_e, model, train_t = _best_energy_fit(
        train, tp, candidates, workload, gpus_per_node, source
    )
    held = rows.take(test_idx) if len(test_idx) else train
    pt, pe = held.predict(model)
    return FitReport(
        workload,
        model,
        len(train_idx),
        len(test_idx),
        mape(1.0 / pt, 1.0 / held.t),
        mape(pe, held.e),
        train_t,
        train_e,
    )


def _workload_rows(df: pd.DataFrame, workload: str | None, where: str) -> tuple[str, pd.DataFrame]:
    """The workload to fit (the only one when not given) and its rows, renumbered."""
    names = sorted(df["workload"].unique())
    if workload is None:
        if len(names) != 1:
            raise InstanceError(f"{where}: workload not given and the profile holds {names}")
        workload = names[0]
    if workload not in names:
        raise InstanceError(f"{where}: workload = {workload!r}: not in the profile ({names})")
    return workload, df[df["workload"] == workload].reset_index(drop=True)


def _profiled_gpus_per_node(d: pd.DataFrame, df: pd.DataFrame) -> int:
    """GPUs per node of the profiled cluster: a column, else ``df.attrs``, else 8."""
    if "gpus_per_node" in d.columns:
        return int(d["gpus_per_node"].iloc[0])
    return int(df.attrs.get("gpus_per_node", 8))


def _held_out_split(num_rows: int, held_out: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Random (held-out, training) row indices; at least one row held out when asked."""
    perm = np.random.default_rng(seed).permutation(num_rows)
    k = max(1, round(held_out * num_rows)) if held_out > 0 else 0
    return perm[:k], perm[k:]


def _f0_candidates(x: np.ndarray) -> list[float]:
    """Breaking clocks f_0 to try (GHz): the profile's clocks but the two lowest and the top."""
    clocks = np.unique(x)
    return list(clocks[2:-1]) or [clocks[0]]


@dataclasses.dataclass(frozen=True)
class _FitRows:
    """The columns of a workload's rows that the model equations read.

    ``n`` GPUs, ``x`` the clock in GHz, ``bs`` the local batch, ``r`` GPUs on the node,
    ``t`` seconds and ``e`` joules of one iteration, ``global_bs`` the batch as profiled.
    """

    n: np.ndarray
    x: np.ndarray
    bs: np.ndarray
    r: np.ndarray
    t: np.ndarray
    e: np.ndarray
    global_bs: np.ndarray
    gpus_per_node: int

    @classmethod
    def from_frame(cls, d: pd.DataFrame, gpus_per_node: int) -> _FitRows:
        n = d["num_gpus"].to_numpy(float)
        return cls(
            n,
            _x(d["knob_value"].to_numpy(float)),
            d["batch_size"].to_numpy(float) / n,
            gpus_on_node(n, gpus_per_node),
            d["time_s"].to_numpy(float),
            d["energy_j"].to_numpy(float),
            d["batch_size"].to_numpy(),
            gpus_per_node,
        )

    def take(self, idx: np.ndarray) -> _FitRows:
        arrays = (self.n, self.x, self.bs, self.r, self.t, self.e, self.global_bs)
        return _FitRows(*(a[idx] for a in arrays), self.gpus_per_node)

    def time_components(self, tp: Mapping[str, float]) -> tuple[np.ndarray, ...]:
        """(T_grad, T_sync, T_iter) of each row under the fitted throughput model (Eqs. 2-5)."""
        tg = np.maximum(t_grad(tp, self.x, self.bs), 0)
        ts = t_sync(tp, self.x, self.n, self.gpus_per_node)
        ti = combine(tp, t_io(tp, self.bs, self.r), tg, ts)
        return tg, ts, ti

    def predict(self, model: PerformanceModel) -> tuple[np.ndarray, np.ndarray]:
        """The model's (seconds, joules) of one iteration for each row."""
        return model.iteration(self.n, self.x * 1000, self.global_bs)


def _best_energy_fit(
    train: _FitRows,
    tp: dict[str, float],
    candidates: Sequence[float],
    workload: str,
    gpus_per_node: int,
    source: str,
) -> tuple[float, PerformanceModel, float]:
    """Fit the energy model at each candidate f_0; keep the least training energy MAPE.

    Returns that MAPE, the model, and the model's training MAPE of the throughput.
    """
    comps = train.time_components(tp)
    best = None
    for f0 in candidates:
        ep = _fit_energy(train.n, train.x, train.bs, comps, train.e, f0)
        model = PerformanceModel(workload, tp, ep, float(f0 * 1000), gpus_per_node, source)
        pt, pe = train.predict(model)
        err = mape(pe, train.e)
        if best is None or err < best[0]:
            best = (err, model, mape(1.0 / pt, 1.0 / train.t))
    return best


def fit_all(
    df: pd.DataFrame, *, workloads: Sequence[str] | None = None, **kwargs: Any
) -> dict[str, FitReport]:
    """:func:`fit_from_profile` for every workload of a profile."""
    names = workloads or sorted(validate_profile(df)["workload"].unique())
    return {w: fit_from_profile(df, workload=w, **kwargs) for w in names}


def fit_table(reports: Mapping[str, FitReport]) -> pd.DataFrame:
    """Table 2 layout: held-out MAPE of the throughput and energy models per workload."""
    import pandas as pd  # here, not at the top: the package starts without pandas

    return pd.DataFrame(
        [
            {
                "workload": w,
                "rows_fit": r.rows_fit,
                "rows_held_out": r.rows_held_out,
                "throughput_mape": r.time_mape,
                "energy_mape": r.energy_mape,
                "f0_mhz": r.model.f0_mhz,
            }
            for w, r in reports.items()
        ]
    )
