"""Benchmark suites of the tuning family: ``suite("smoke")`` and ``suite("paper")``.

``paper`` is the paper's setting (Sec. 6.2): the six workloads of Table 1 from a
folder of Zeus-format traces (default ``../shared/data/zeus-nsdi23/``, which holds
V100 and A40), eta = 0.5, beta = 2, 2 x |B| x |P| recurrences. Every
``summary_power_<gpu>.csv`` beside ``summary_train.csv`` is used: the GPU list is
read from the folder, so any trace in that format works. A workload that a GPU's
trace lacks is left out, and a missing paper default batch size is substituted
(:func:`energyopt.tuning.trace.substitute_default_batch_size`); both are reported
by :func:`paper_trace_notes`. Without a trace the suite falls back to generated
instances of the same scale (|B| = 10, |P| = 7), labelled as such in ``source``.
"""

from __future__ import annotations

from pathlib import Path

from energyopt.tuning.generators import synthetic_instance
from energyopt.tuning.instance import TuningInstance

#: Where the shared Zeus trace lives, relative to the repository root.
DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "zeus-nsdi23"


def trace_available(data_dir: Path = DATA) -> bool:
    """Whether ``data_dir`` holds a Zeus-format trace: the train table and a power table."""
    # The trace module imports pandas (0.14 s), which the smoke suite does not need: it is
    # imported when a trace is looked for, not when the bench's planning imports this.
    from energyopt.tuning.trace import trace_gpus

    return (Path(data_dir) / "summary_train.csv").exists() and bool(trace_gpus(data_dir))


def paper_trace_instances(data_dir: Path = DATA) -> tuple[list[TuningInstance], list[str]]:
    """The paper suite's instances from a trace folder, and what was left out or substituted."""
    from energyopt.tuning.trace import trace_gpus, zeus_trace_instances  # see trace_available

    notes: list[str] = []
    out: list[TuningInstance] = []
    for gpu in trace_gpus(data_dir):
        out.extend(zeus_trace_instances(data_dir, gpu, eta=0.5, beta=2.0, notes=notes))
    for inst in out:
        note = inst.source.get("default_batch_size_note")
        if note:
            notes.append(f"{inst.gpu}: {inst.name}: {note}")
    return out, notes


def paper_trace_notes(data_dir: Path = DATA) -> list[str]:
    """Lines saying which workloads a trace lacks and which default batch sizes were replaced."""
    return paper_trace_instances(data_dir)[1] if trace_available(data_dir) else []


def missing_data(name: str, data_dir: Path | None = None) -> list[str]:
    """The data files suite ``name`` derives its instances from that are missing here.

    Without them ``paper`` falls back to synthetic instances; ``energyopt instances
    generate`` then refuses to replace the library's data-derived ones.
    """
    if name != "paper":
        return []
    from energyopt.tuning.trace import trace_gpus  # see trace_available

    data_dir = DATA if data_dir is None else Path(data_dir)
    if trace_available(data_dir):
        return []
    missing = [] if (data_dir / "summary_train.csv").exists() else ["summary_train.csv"]
    if not trace_gpus(data_dir):
        missing.append("summary_power_<gpu>.csv")
    return [str(data_dir / f) for f in missing]


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
            return paper_trace_instances(data_dir)[0]
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
