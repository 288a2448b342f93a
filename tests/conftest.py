"""Shared test fixtures: where the published data lives (tests skip without it)."""

from __future__ import annotations

from pathlib import Path

import pytest

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
