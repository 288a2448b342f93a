"""The fuzz suite's helpers live in fuzzutil.py, next to this file."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
