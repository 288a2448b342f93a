"""Fixtures of the bench tests (helpers live in benchutil.py, next to this file)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchutil import instance_files  # noqa: F401  (fixture)
