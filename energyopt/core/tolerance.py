"""How far two objective values may differ and still agree.

Below both :mod:`energyopt.core.family` (a family's hooks carry one) and
:mod:`energyopt.core.scoring` (the scorer applies it), so that neither imports the other.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Tolerance:
    """Objectives agree when ``|a - b| <= max(atol, rtol * |b|)``; ``unit`` is for messages.

    Examples
    --------
    >>> Tolerance(rtol=1e-3, atol=0.0).allows(100.05, 100.0)
    True
    >>> Tolerance(rtol=1e-3, atol=0.0).allows(100.2, 100.0)
    False
    """

    rtol: float = 1e-6
    atol: float = 1e-6
    unit: str = ""

    def allows(self, value: float, reference: float) -> bool:
        return abs(value - reference) <= max(self.atol, self.rtol * abs(reference))
