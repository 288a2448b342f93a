"""``python -m energyopt.cli``: the ``energyopt`` command."""

import sys

from energyopt.cli import main

sys.exit(main())
