"""From a profile to published measurement formats.

- :func:`to_zeus_power_table`: the Zeus power trace (``summary_power_<gpu>.csv``)
  that the Zeus trace replay reads.

A profile becomes a family's instance in that family: PEM option tables and
instances in :mod:`energyopt.pipeline.from_profile`; the PowerFlow model fits read
profiles directly (``energyopt.powercap.fit_from_profile``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from energyopt.core.instance import InstanceError
from energyopt.profiles.readers import ZEUS_POWER_COLUMNS
from energyopt.profiles.schema import validate_profile


def to_zeus_power_table(
    df: pd.DataFrame,
    *,
    iterations_per_epoch: int | Mapping[tuple[str, int], int] | None = None,
    optimizer: str = "unknown",
    where: str = "profile",
) -> pd.DataFrame:
    """The Zeus power trace of the ``power_limit_w`` rows of a profile.

    Columns ``dataset,network,batch_size,optimizer,power_limit,time_per_epoch,
    average_power`` (``summary_power_<gpu>.csv``). ``workload`` is split at
    its first ``/`` into dataset and network (a workload without ``/`` is used
    for both). Rows whose operation is ``epoch`` give one epoch directly;
    other operations (``iteration``) are scaled by ``iterations_per_epoch``,
    an integer or a mapping ``{(workload, batch_size): iterations}``:
    ``time_per_epoch = time_s * iterations`` and ``average_power = energy_j /
    time_s`` (power does not change with the number of iterations).
    The optimizer comes from an ``optimizer`` column when there is one.
    """
    df = validate_profile(df, where)
    df = df[df["knob"] == "power_limit_w"]
    if df.empty:
        raise InstanceError(f"{where}: no power_limit_w rows (the Zeus trace is per power limit)")
    rows = []
    for idx, r in df.iterrows():
        if r["time_s"] <= 0:
            raise InstanceError(f"{where}, row {idx}: time_s = {r['time_s']!r}: must be > 0")
        if r["operation"] == "epoch":
            n = 1
        else:
            if iterations_per_epoch is None:
                raise InstanceError(
                    f"{where}, row {idx}: operation = {r['operation']!r}: give "
                    "iterations_per_epoch to turn it into epochs"
                )
            if isinstance(iterations_per_epoch, Mapping):
                key = (str(r["workload"]), int(r["batch_size"]))
                if key not in iterations_per_epoch:
                    raise InstanceError(f"{where}, row {idx}: iterations_per_epoch has no {key}")
                n = iterations_per_epoch[key]
            else:
                n = iterations_per_epoch
            if not (isinstance(n, int) and n >= 1):
                raise InstanceError(f"iterations_per_epoch = {n!r}: must be an integer >= 1")
        dataset, sep, network = str(r["workload"]).partition("/")
        opt = r.get("optimizer", optimizer)
        if not isinstance(opt, str):  # NaN in a partly filled column
            opt = optimizer
        rows.append(
            {
                "dataset": dataset,
                "network": network if sep else dataset,
                "batch_size": int(r["batch_size"]),
                "optimizer": opt,
                "power_limit": float(r["knob_value"]),
                "time_per_epoch": float(r["time_s"]) * n,
                "average_power": float(r["energy_j"]) / float(r["time_s"]),
            }
        )
    out = pd.DataFrame(rows, columns=list(ZEUS_POWER_COLUMNS))
    pl = out["power_limit"]
    if (pl == pl.round()).all():
        out["power_limit"] = pl.astype(int)  # the published traces write whole watts
    if not out["average_power"].map(math.isfinite).all():
        raise InstanceError(f"{where}: non-finite average power")
    out.attrs["source"] = ", ".join(sorted(map(str, df["source"].unique())))
    return out
