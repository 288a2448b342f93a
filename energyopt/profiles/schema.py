"""The one profile schema that every producer writes and every family reads.

A profile is a tidy table with one row per measured setting:

============  =====================================================================
column        meaning
============  =====================================================================
gpu           GPU model name as NVML reports it (e.g. ``NVIDIA A100-SXM4-40GB``)
knob          what was swept: ``sm_clock_mhz`` or ``power_limit_w``
knob_value    its value (MHz or W)
workload      what ran (e.g. ``gpt3-175b``, ``cifar100/shufflenetv2``, ``matmul``)
operation     which part of it (``forward``, ``backward``, ``epoch``, ``iteration``, ...)
batch_size    batch size of one ``operation`` (0 when not applicable)
time_s        seconds of one ``operation``
energy_j      joules of one ``operation``
samples       how many repetitions the figures average (>= 1)
source        ``nvml``, ``simulated``, ``zeus-trace``, ``perseus-profile``, ...
============  =====================================================================

Optional columns: ``stage`` (pipeline stage), ``num_gpus`` (GPUs the operation
ran on), ``power_w`` (mean power). Table-level metadata (GPU name, driver
version, collection date, sampling period) goes in ``DataFrame.attrs`` and in a
JSON sidecar file.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from energyopt.core import validate as V
from energyopt.core.instance import InstanceError
from energyopt.core.paths import output_file, raised_as_output_error

if TYPE_CHECKING:  # pandas is imported where tables are built: the CLI starts without it
    import pandas as pd

COLUMNS: tuple[str, ...] = (
    "gpu",
    "knob",
    "knob_value",
    "workload",
    "operation",
    "batch_size",
    "time_s",
    "energy_j",
    "samples",
    "source",
)
OPTIONAL_COLUMNS: tuple[str, ...] = ("stage", "num_gpus", "power_w")
KNOBS: tuple[str, ...] = ("sm_clock_mhz", "power_limit_w")


def profile_row(
    *,
    gpu: str,
    knob: str,
    knob_value: float,
    workload: str,
    operation: str,
    batch_size: int,
    time_s: float,
    energy_j: float,
    samples: int,
    source: str,
    **optional: Any,
) -> dict[str, Any]:
    """One profile row: the schema's columns in order, then the optional ones.

    ``power_w`` defaults to the operation's mean power ``energy_j / time_s`` (NaN for
    a zero time); pass it to record another figure.
    """
    row: dict[str, Any] = {
        "gpu": gpu,
        "knob": knob,
        "knob_value": knob_value,
        "workload": workload,
        "operation": operation,
        "batch_size": int(batch_size),
        "time_s": time_s,
        "energy_j": energy_j,
        "samples": samples,
        "source": source,
    }
    row.update(optional)
    row.setdefault("power_w", energy_j / time_s if time_s > 0 else math.nan)
    return row


def validate_profile(df: pd.DataFrame, where: str = "profile") -> pd.DataFrame:
    """Check a profile table and return it with canonical dtypes and column order.

    Raises
    ------
    InstanceError
        Naming ``where``, the row and the column of the first bad value.
    """
    import pandas as pd

    V.columns(where, list(df.columns), COLUMNS)
    if df.empty:
        raise InstanceError(f"{where}: no rows")
    out = df.copy()
    has_stage = "stage" in out.columns
    for idx, row in enumerate(out.to_dict("records")):
        try:
            _check_row(row, has_stage)
        except InstanceError as exc:
            raise InstanceError(f"{where}, row {out.index[idx]}: {exc}") from None
    for col in ("knob_value", "time_s", "energy_j", "batch_size", "samples"):
        out[col] = pd.to_numeric(out[col])
    out["batch_size"] = out["batch_size"].astype(int)
    out["samples"] = out["samples"].astype(int)
    extra = [c for c in out.columns if c not in COLUMNS]
    return out[list(COLUMNS) + extra]


def _check_row(row: dict[str, Any], has_stage: bool) -> None:
    """One profile row, strictly: clocks, batch sizes, samples and stages are integers."""
    knob = row["knob"]
    if knob not in KNOBS:
        raise V.fail("knob", knob, f"expected one of {', '.join(KNOBS)}")
    if knob == "sm_clock_mhz":
        V.integer("knob_value", V.csv_cell(row["knob_value"]), minimum=1, maximum=None)
    else:
        V.number("knob_value", V.csv_cell(row["knob_value"]), minimum=0.0)
    V.number("time_s", V.csv_cell(row["time_s"]), minimum=0.0)
    V.number("energy_j", V.csv_cell(row["energy_j"]), minimum=0.0)
    V.integer("batch_size", V.csv_cell(row["batch_size"]), minimum=0, maximum=None)
    V.integer("samples", V.csv_cell(row["samples"]), minimum=1, maximum=None)
    stage = row.get("stage") if has_stage else None
    if stage is not None and not (isinstance(stage, float) and math.isnan(stage)):
        V.integer("stage", V.csv_cell(stage), minimum=0)


def write_profile(
    df: pd.DataFrame, path: str | Path, metadata: dict[str, Any] | None = None
) -> Path:
    """Write a profile as CSV or Parquet (by suffix), metadata into ``<path>.meta.json``."""
    path = output_file(path, "profile")
    df = validate_profile(df, str(path))
    with raised_as_output_error(path, "profile"):
        _write(df, path, {**df.attrs, **(metadata or {})})
    return path


def _write(df: pd.DataFrame, path: Path, meta: dict[str, Any]) -> None:
    # Through a temporary file renamed over ``path``: a full disk leaves no truncated
    # profile behind, and the error names the file.
    from energyopt.core.files import atomic_write, write_text

    if path.suffix == ".parquet":
        try:
            with atomic_write(path, "profile", mode="wb") as handle:
                df.to_parquet(handle, index=False)
        except ImportError:
            raise InstanceError(
                f"{path}: Parquet needs the optional pyarrow package (pip install pyarrow); "
                "or write .csv"
            ) from None
    else:
        with atomic_write(path, "profile") as handle:
            df.to_csv(handle, index=False)
    if meta:
        text = json.dumps(meta, indent=1, default=str) + "\n"
        write_text(str(path) + ".meta.json", text, "profile metadata")


#: The most rows of one profile (a sweep of ~100 SM clocks x 2 operations x 100 stages
#: is 20,000; the published Perseus profiles have ~1,300).
MAX_PROFILE_ROWS = 100_000

#: The largest metadata sidecar (``<profile>.meta.json``) read.
MAX_METADATA_BYTES = 2**20


def read_profile(path: str | Path) -> pd.DataFrame:
    """Read a profile written by :func:`write_profile` (metadata into ``attrs``).

    The file must be a regular file within the caps of :mod:`energyopt.core.files`
    and hold at most :data:`MAX_PROFILE_ROWS` rows, all checked before parsing.
    """
    import io

    import pandas as pd

    from energyopt.core.files import MAX_CSV_BYTES, read_bytes, read_csv_text

    path = Path(path)
    try:
        if path.suffix == ".parquet":
            df = _read_parquet(path, read_bytes(path, cap=MAX_CSV_BYTES, what="profile"))
        else:
            text = read_csv_text(path, max_rows=MAX_PROFILE_ROWS, what="profile")
            df = pd.read_csv(io.StringIO(text))
    except ImportError:
        raise InstanceError(
            f"{path}: Parquet needs the optional pyarrow package (pip install pyarrow)"
        ) from None
    except (OSError, ValueError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        if isinstance(exc, InstanceError):
            raise
        raise InstanceError(f"{path}: cannot read profile: {V.one_line(exc)}") from None
    df = validate_profile(df, str(path))
    meta = Path(str(path) + ".meta.json")
    if meta.exists():
        from energyopt.core.files import read_text

        try:
            text = read_text(meta, cap=MAX_METADATA_BYTES, what="metadata file")
            df.attrs.update(V.mapping("metadata", json.loads(text)))
        except InstanceError:
            raise
        except (ValueError, RecursionError) as exc:
            raise InstanceError(
                f"{meta}: not a JSON object of metadata ({V.one_line(exc)})"
            ) from None
    return df


def _read_parquet(path: Path, data: bytes) -> pd.DataFrame:
    """A Parquet profile whose size, from its footer, is checked before it is decoded
    (a few MiB of compressed data can unpack to gigabytes)."""
    import io

    import pyarrow.parquet as pq

    from energyopt.core.files import MAX_COLUMNS

    meta = pq.ParquetFile(io.BytesIO(data)).metadata
    if meta.num_columns > MAX_COLUMNS or meta.num_rows > MAX_PROFILE_ROWS:
        raise InstanceError(
            f"{path}: {meta.num_rows} rows x {meta.num_columns} columns, more than a profile "
            f"may hold ({MAX_PROFILE_ROWS} x {MAX_COLUMNS})"
        )
    return pq.read_table(io.BytesIO(data)).to_pandas()
