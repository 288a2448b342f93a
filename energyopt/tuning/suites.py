"""Benchmark suites of the tuning family: ``suite("smoke")`` and ``suite("paper")``.

``paper`` is the paper's setting (Sec. 6.2): the six workloads of Table 1 on
V100 and A40 from the Zeus trace in ``../shared/data/zeus-nsdi23/``, eta = 0.5,
beta = 2, 2 x |B| x |P| recurrences. Without that folder it falls back to
generated instances of the same scale (|B| = 10, |P| = 7), labelled as such in
``source``.
"""

from __future__ import annotations

from pathlib import Path

from energyopt.tuning.generators import synthetic_instance
from energyopt.tuning.instance import TuningInstance
from energyopt.tuning.trace import zeus_trace_instances

#: Where the shared Zeus trace lives, relative to the repository root.
DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "zeus-nsdi23"
GPUS = ("v100", "a40")


def trace_available(data_dir: Path = DATA) -> bool:
    return all(
        (data_dir / f).exists()
        for f in ("summary_train.csv", *(f"summary_power_{g}.csv" for g in GPUS))
    )


def missing_data(name: str, data_dir: Path | None = None) -> list[str]:
    """The data files suite ``name`` derives its instances from that are missing here.

    Without them ``paper`` falls back to synthetic instances; ``energyopt instances
    generate`` then refuses to replace the library's data-derived ones.
    """
    if name != "paper":
        return []
    data_dir = DATA if data_dir is None else Path(data_dir)
    needed = ("summary_train.csv", *(f"summary_power_{g}.csv" for g in GPUS))
    return [str(data_dir / f) for f in needed if not (data_dir / f).exists()]


def suite(name: str, data_dir: Path | None = None) -> list[TuningInstance]:
    """The instances of suite ``name`` (``"smoke"`` or ``"paper"``).

    Raises
    ------
    ValueError
        For an unknown suite name.
    """
    if name == "smoke":
        return [
            synthetic_instance(
                seed,
                batch_sizes=(16, 32, 64, 128, 256),
                power_limits_w=(100.0, 150.0, 200.0, 250.0),
                recurrences=20,
            )
            for seed in (1, 2)
        ]
    if name == "paper":
        data_dir = DATA if data_dir is None else Path(data_dir)
        if trace_available(data_dir):
            out: list[TuningInstance] = []
            for gpu in GPUS:
                out.extend(zeus_trace_instances(data_dir, gpu, eta=0.5, beta=2.0))
            return out
        return [
            synthetic_instance(
                seed,
                batch_sizes=(8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096),
                power_limits_w=(100.0, 125.0, 150.0, 175.0, 200.0, 225.0, 250.0),
                max_epochs=100,
            )
            for seed in range(6)
        ]
    raise ValueError(f"unknown suite {name!r}; known: smoke, paper")
