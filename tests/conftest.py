"""Shared test fixtures: where the published data lives (tests skip without it)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Property-based tests: a quick profile for every run (CI), a long one for releases:
#   python -m pytest tests/properties --hypothesis-profile release
settings.register_profile(
    "ci",
    max_examples=100,
    deadline=None,
    derandomize=True,  # CI runs the same cases every time
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "release", max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("ci")

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"
PERSEUS_DATA = SHARED_DATA / "perseus-sosp24"
ZEUS_DATA = SHARED_DATA / "zeus-nsdi23"


@pytest.fixture
def perseus_profile() -> Path:
    path = PERSEUS_DATA / "gpt3-175b+a100_sxm_bf16.csv"
    if not path.exists():
        pytest.skip("published Perseus data (../shared/data/perseus-sosp24) not present")
    return path


def _fork_instance(deadline_s=3.0):
    """r (stage 0, fixed 1 s, 10 J) -> p (stage 0) and q (stage 1); S = 2, P_b = 5 W.

    p: (1 s, 20 J) or (2 s, 12 J); q: (1 s, 20 J) or (3 s, 8 J). Effective energies
    c = e - 5 t: r 5; p 15 or 2; q 15 or -7. Energy = sum c + P_b S T = sum c + 10 T.
    """
    from energyopt.pipeline import OptionTable, PemInstance
    from energyopt.pipeline.schedules import Computation

    tables = {
        "r": OptionTable((None,), (1.0,), (10.0,)),
        "p": OptionTable((1400, 700), (1.0, 2.0), (20.0, 12.0)),
        "q": OptionTable((1400, 500), (1.0, 3.0), (20.0, 8.0)),
    }
    comps = (
        Computation(0, "load", None, "r"),
        Computation(0, "forward", 0, "p"),
        Computation(1, "forward", 0, "q"),
    )
    return PemInstance(2, comps, ((0, 1), (0, 2)), tables, 5.0, deadline_s)


@pytest.fixture
def fork():
    """Factory of the hand-checked fork instance (see ``_fork_instance``)."""
    return _fork_instance
