"""Readers for the Zeus NSDI'23 trace format and instances built from it.

Two tables (see ``../shared/data/zeus-nsdi23/`` and its upstream README):

* power trace ``summary_power_<gpu>.csv``:
  ``dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power``
  (seconds per epoch and mean watts of each (workload, batch size, power limit));
* train trace ``summary_train.csv``:
  ``dataset,network,batch_size,optimizer,learning_rate,run,target_metric,target_epoch``
  (the epoch at which run ``run`` reached ``target_metric``).

Both readers accept a path or a :class:`pandas.DataFrame` in that format (so a
converter from any profile to a Zeus power table can feed them). Malformed input
raises :class:`~energyopt.core.instance.InstanceError` naming the source, the
line and the field. Documented skipping (never silent, recorded in
``TuningInstance.source``):

* a NaN ``target_epoch`` means that run never reached the target: it is kept
  as a failed training path (``None``), as in the Zeus simulator;
* batch sizes that the power trace has but the train trace lacks at the target
  metric (or the reverse), and batch sizes whose power limits do not cover the
  workload's whole set P, are left out of B;
* repeated (batch size, power limit) rows of one workload are averaged (the
  Zeus simulator does the same).
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pandas as pd

from energyopt.core import validate as V
from energyopt.core.instance import InstanceError
from energyopt.profiles.readers import MAX_ROWS, ZEUS_POWER_COLUMNS, read_csv_table
from energyopt.tuning.instance import TuningInstance

# The Zeus summary_power_<gpu>.csv columns, defined once beside the profile readers.
POWER_COLUMNS = ZEUS_POWER_COLUMNS
TRAIN_COLUMNS = ("dataset", "network", "batch_size", "optimizer", "target_metric", "target_epoch")
TRAIN_OPTIONAL = ("learning_rate", "run")


@dataclasses.dataclass(frozen=True)
class WorkloadSpec:
    """One recurring job of the paper's Table 1.

    ``max_epochs`` follows the Zeus authors' trace-driven scripts (the paper does
    not print it).
    """

    dataset: str
    network: str
    optimizer: str
    target_metric: float
    default_batch_size: int
    max_epochs: int

    @property
    def name(self) -> str:
        return f"{self.dataset}/{self.network}"


#: The six workloads of the paper's Table 1 (b0 and target metric from the table).
PAPER_WORKLOADS: dict[str, WorkloadSpec] = {
    s.name: s
    for s in (
        WorkloadSpec("librispeech", "deepspeech2", "adamw", 40.0, 192, 16),
        WorkloadSpec("squad", "bert_base_uncased", "adamw", 84.0, 32, 6),
        WorkloadSpec("sentiment140", "bert_base_uncased", "adamw", 0.84, 128, 10),
        WorkloadSpec("imagenet", "resnet50", "adadelta", 0.65, 256, 100),
        WorkloadSpec("cifar100", "shufflenetv2", "adadelta", 0.6, 1024, 100),
        WorkloadSpec("movielens-1m", "ncf", "adam", 0.41, 1024, 100),
    )
}


def _read(source: str | Path | pd.DataFrame, what: str) -> tuple[pd.DataFrame, str]:
    if isinstance(source, pd.DataFrame):
        return source.copy(), f"<{what} DataFrame>"
    # Checked before pandas parses it (a regular file, bounded size and rows, a sane
    # header, no truncated row, which pandas would fill with NaN: a "never reached" run);
    # the columns are checked by the caller.
    return read_csv_table(Path(source), (), max_rows=MAX_ROWS), str(source)


def _require(df: pd.DataFrame, columns: tuple[str, ...], where: str) -> None:
    V.columns(where, list(df.columns), columns)  # names a few found, never the whole file
    if df.empty:
        raise InstanceError(f"{where}: no rows")


def _numeric(
    df: pd.DataFrame,
    col: str,
    where: str,
    *,
    positive: bool,
    integer: bool = False,
    allow_nan: bool = False,
) -> None:
    """Coerce ``col`` to numbers, naming the first bad line (header = line 1)."""
    raw = df[col]
    num = pd.to_numeric(raw, errors="coerce")
    for k, (idx, x) in enumerate(num.items()):
        line = k + 2
        bad = None
        if x is None or (isinstance(x, float) and math.isnan(x)):
            if allow_nan and (pd.isna(raw.loc[idx]) or str(raw.loc[idx]).strip().lower() == "nan"):
                continue
            bad = "not a number" if not pd.isna(raw.loc[idx]) else "missing (NaN)"
        elif not math.isfinite(float(x)):
            bad = "must be finite"
        elif positive and not float(x) > 0:
            bad = "must be > 0"
        elif not positive and float(x) < 0:
            bad = "must be >= 0"
        elif integer and float(x) != int(x):
            bad = "must be an integer"
        if bad:
            shown = raw.loc[idx]
            shown = shown.item() if hasattr(shown, "item") else shown
            raise InstanceError(f"{where}, line {line}: {col} = {shown!r}: {bad}")
    df[col] = num


def read_power_trace(source: str | Path | pd.DataFrame) -> pd.DataFrame:
    """Read and check a Zeus power trace (``summary_power_<gpu>.csv`` format).

    Parameters
    ----------
    source
        A CSV path or a DataFrame with columns ``dataset, network, batch_size,
        optimizer, power_limit, time_per_epoch, average_power``.

    Returns
    -------
    pandas.DataFrame
        The checked table with numeric columns, plus ``energy_per_epoch_j``.

    Raises
    ------
    InstanceError
        Missing columns, no rows, or a non-numeric, NaN, infinite or
        non-positive batch size, power limit, time or power (naming the line).
    """
    df, where = _read(source, "power trace")
    _require(df, POWER_COLUMNS, where)
    df = df.reset_index(drop=True)
    _numeric(df, "batch_size", where, positive=True, integer=True)
    _numeric(df, "power_limit", where, positive=True)
    _numeric(df, "time_per_epoch", where, positive=True)
    _numeric(df, "average_power", where, positive=True)
    df["batch_size"] = df["batch_size"].astype(int)
    for col in ("dataset", "network", "optimizer"):
        df[col] = df[col].astype(str).str.strip()
    df["energy_per_epoch_j"] = df["time_per_epoch"] * df["average_power"]
    df.attrs["where"] = where
    df.attrs["zeus_checked"] = "power"
    return df


def read_train_trace(source: str | Path | pd.DataFrame) -> pd.DataFrame:
    """Read and check a Zeus train trace (``summary_train.csv`` format).

    A NaN ``target_epoch`` is kept: that run never reached ``target_metric``
    (a failed training path). Any other missing, non-numeric or negative value
    raises.

    Raises
    ------
    InstanceError
        Missing columns, no rows, NaN ``target_metric``, negative or fractional
        ``target_epoch``, bad batch size (naming the line).
    """
    df, where = _read(source, "train trace")
    _require(df, TRAIN_COLUMNS, where)
    df = df.reset_index(drop=True)
    _numeric(df, "batch_size", where, positive=True, integer=True)
    _numeric(df, "target_metric", where, positive=False)
    _numeric(df, "target_epoch", where, positive=True, integer=True, allow_nan=True)
    df["batch_size"] = df["batch_size"].astype(int)
    for col in ("dataset", "network", "optimizer"):
        df[col] = df[col].astype(str).str.strip()
    df.attrs["where"] = where
    df.attrs["zeus_checked"] = "train"
    return df


def _checked(df: object, kind: str) -> bool:
    return isinstance(df, pd.DataFrame) and df.attrs.get("zeus_checked") == kind


def instance_from_trace(
    power: str | Path | pd.DataFrame,
    train: str | Path | pd.DataFrame,
    spec: WorkloadSpec,
    *,
    gpu: str,
    eta: float = 0.5,
    beta: float | None = 2.0,
    recurrences: int = 0,
) -> TuningInstance:
    """Build the :class:`TuningInstance` of one workload from the two trace tables.

    Parameters
    ----------
    power, train
        Paths or DataFrames in the Zeus formats (see the module docstring).
    spec
        Workload, optimizer, target metric, b0 and max_epochs.
    gpu
        Name recorded in the instance (e.g. ``"v100"``).
    eta, beta, recurrences
        Experiment knobs; ``recurrences=0`` means ``2 x |B| x |P|`` (paper Sec. 6.2).
    """
    pw = power if _checked(power, "power") else read_power_trace(power)
    tr = train if _checked(train, "train") else read_train_trace(train)
    pwhere, twhere = pw.attrs.get("where", "power trace"), tr.attrs.get("where", "train trace")
    pw = _workload_power_rows(pw, spec, pwhere)
    tr = _workload_train_rows(tr, spec, twhere)
    skipped: list[str] = []
    table = _mean_power_table(pw, skipped)
    limits = sorted(table.power_limit.unique())
    batch_sizes = _complete_batch_sizes(table, tr, limits, skipped)
    if not batch_sizes:
        raise InstanceError(f"{pwhere} + {twhere}: no batch size of {spec.name} has both traces")
    times, powers, paths = _per_batch_size(table, tr, batch_sizes)
    consistent = [
        b
        for b, runs in zip(batch_sizes, paths)
        if all(e is not None and e <= spec.max_epochs for e in runs)
    ]
    b0, b0_note = substitute_default_batch_size(spec.default_batch_size, batch_sizes, consistent)
    if b0_note:
        skipped.append(b0_note)
    return TuningInstance(
        name=spec.name,
        gpu=gpu,
        batch_sizes=tuple(batch_sizes),
        power_limits_w=tuple(float(p) for p in limits),
        default_batch_size=b0,
        epoch_time_s=tuple(times),
        avg_power_w=tuple(powers),
        target_epochs=tuple(paths),
        eta=eta,
        beta=beta,
        recurrences=recurrences,
        max_epochs=spec.max_epochs,
        source={
            "kind": "zeus-trace",
            "power_trace": Path(pwhere).name,
            "train_trace": Path(twhere).name,
            "optimizer": spec.optimizer,
            "target_metric": spec.target_metric,
            "skipped": skipped,
            **({"default_batch_size_note": b0_note} if b0_note else {}),
        },
    )


def _workload_power_rows(pw: pd.DataFrame, spec: WorkloadSpec, where: str) -> pd.DataFrame:
    """The power-trace rows of the workload (optimizer matched case-insensitively)."""
    pw = pw[_workload_mask(pw, spec)]
    if pw.empty:
        raise InstanceError(
            f"{where}: no rows for dataset={spec.dataset!r}, network={spec.network!r}, "
            f"optimizer={spec.optimizer!r}"
        )
    return pw


def _workload_train_rows(tr: pd.DataFrame, spec: WorkloadSpec, where: str) -> pd.DataFrame:
    """The train-trace runs of the workload at its target metric."""
    tr = tr[
        _workload_mask(tr, spec) & np.isclose(tr.target_metric.astype(float), spec.target_metric)
    ]
    if tr.empty:
        raise InstanceError(
            f"{where}: no rows for dataset={spec.dataset!r}, network={spec.network!r}, "
            f"optimizer={spec.optimizer!r}, target_metric={spec.target_metric!r}"
        )
    return tr


def _mean_power_table(pw: pd.DataFrame, skipped: list[str]) -> pd.DataFrame:
    """Epoch time and mean power per (batch size, power limit), repeats averaged
    (as the Zeus simulator does; the count goes to ``skipped``)."""
    table = pw.groupby(["batch_size", "power_limit"], as_index=False)[
        ["time_per_epoch", "average_power"]
    ].mean()
    repeats = int(len(pw) - len(table))
    if repeats:
        skipped.append(f"{repeats} repeated (batch_size, power_limit) rows averaged")
    return table


def _complete_batch_sizes(
    table: pd.DataFrame, tr: pd.DataFrame, limits: list[float], skipped: list[str]
) -> list[int]:
    """The set B: batch sizes in both traces with every power limit of P.

    Each batch size left out is recorded in ``skipped`` with the reason.
    """
    bs_power = set(table.batch_size.unique())
    bs_train = set(tr.batch_size.unique())
    batch_sizes = []
    for b in sorted(bs_power | bs_train):
        if b not in bs_train:
            skipped.append(f"batch size {b}: no training runs at the target metric")
            continue
        if b not in bs_power:
            skipped.append(f"batch size {b}: not in the power trace")
            continue
        have = set(table.loc[table.batch_size == b, "power_limit"])
        if have != set(limits):
            miss = sorted(set(limits) - have)
            skipped.append(f"batch size {b}: power limits {miss} missing from the power trace")
            continue
        batch_sizes.append(int(b))
    return batch_sizes


def _per_batch_size(
    table: pd.DataFrame, tr: pd.DataFrame, batch_sizes: list[int]
) -> tuple[list[tuple[float, ...]], list[tuple[float, ...]], list[tuple[int | None, ...]]]:
    """Per batch size: epoch times and powers by ascending power limit, and the epochs
    each training run took to reach the target (``None`` for a run that never did)."""
    times, powers, paths = [], [], []
    for b in batch_sizes:
        rows = table[table.batch_size == b].sort_values("power_limit")
        times.append(tuple(float(x) for x in rows.time_per_epoch))
        powers.append(tuple(float(x) for x in rows.average_power))
        eps = tr.loc[tr.batch_size == b, "target_epoch"]
        paths.append(tuple(None if pd.isna(e) else int(e) for e in eps))
    return times, powers, paths


def substitute_default_batch_size(
    b0: int, batch_sizes: list[int], consistent: list[int]
) -> tuple[int, str]:
    """The default batch size used when the paper's b0 is not in a GPU's trace.

    Rule (docs/tuning.md): b0 itself when the trace has it; otherwise the largest
    batch size below b0 whose every recorded run reaches the target within
    ``max_epochs`` (a smaller GPU could not fit b0; the Zeus paper's baseline, when
    a model has no published default, is the largest batch size that consistently
    reaches the target, Fig. 1); otherwise the largest below b0; otherwise the
    smallest above it. Returns the size and a note saying what was substituted
    (empty when nothing was).
    """
    if b0 in batch_sizes:
        return b0, ""
    for pool, why in (
        ([b for b in consistent if b < b0], "largest below it whose every run reaches the target"),
        ([b for b in batch_sizes if b < b0], "largest below it; some of its runs miss the target"),
    ):
        if pool:
            return pool[-1], f"default batch size {b0} not in the trace; using {pool[-1]} ({why})"
    above = min(batch_sizes)
    return above, f"default batch size {b0} not in the trace; using {above} (none below it)"


def zeus_trace_instances(
    data_dir: str | Path,
    gpu: str,
    *,
    eta: float = 0.5,
    beta: float | None = 2.0,
    workloads: list[str] | None = None,
    notes: list[str] | None = None,
) -> list[TuningInstance]:
    """The paper's workloads on ``gpu`` from a folder holding the Zeus trace files.

    With ``workloads=None`` every workload of Table 1 that the GPU's power trace
    holds is built; the others are left out, each with a line appended to
    ``notes`` (when given). Workloads named explicitly must be there.
    """
    data_dir = Path(data_dir)
    power = read_power_trace(data_dir / f"summary_power_{gpu}.csv")
    train = read_train_trace(data_dir / "summary_train.csv")
    names = workloads or list(PAPER_WORKLOADS)
    out = []
    for n in names:
        spec = PAPER_WORKLOADS[n]
        if workloads is None and not _has_workload(power, spec):
            if notes is not None:
                notes.append(
                    f"{gpu}: {spec.name} ({spec.optimizer}) not in the power trace; left out"
                )
            continue
        out.append(instance_from_trace(power, train, spec, gpu=gpu, eta=eta, beta=beta))
    return out


def _has_workload(power: pd.DataFrame, spec: WorkloadSpec) -> bool:
    return bool(_workload_mask(power, spec).any())


def _workload_mask(df: pd.DataFrame, spec: WorkloadSpec) -> pd.Series:
    """Rows of the workload's dataset and network with its optimizer (any case)."""
    return (
        (df.dataset == spec.dataset)
        & (df.network == spec.network)
        & (df.optimizer.str.lower() == spec.optimizer.lower())
    )


def trace_gpus(data_dir: str | Path) -> list[str]:
    """GPU names of the Zeus-format power traces in ``data_dir`` (``summary_power_<gpu>.csv``)."""
    prefix = "summary_power_"
    return sorted(p.stem[len(prefix) :] for p in Path(data_dir).glob(f"{prefix}*.csv"))
