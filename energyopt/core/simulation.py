"""One entry point to the families' discrete-event simulators (:func:`simulate`).

The online families keep their own simulators (capacity: rescheduling points of a
cluster; powercap: a PowerFlow cluster under a power cap; tuning: Zeus recurrences
replayed on a trace). :func:`simulate` runs any of them with either a registered
method name or a policy object, through the family's hooks
(:attr:`energyopt.core.family.FamilyHooks.simulate`).
"""

from __future__ import annotations

from typing import Any

from energyopt.core.registry import families, family_hooks


def simulate(family: str, method: Any, /, **scenario: Any) -> Any:
    """Simulate ``family``'s scenario under a registered method or a policy.

    Parameters
    ----------
    family
        ``"capacity"``, ``"powercap"`` or ``"tuning"`` (the families with a simulator).
    method
        A registered method name of the family, or a policy object of the family's
        simulator.
    **scenario
        What the family's simulator needs, and its options:

        - capacity: ``nodes``, ``jobs`` (and :func:`energyopt.capacity.simulator.simulate`'s
          keywords); a policy is a function called like a registered method.
          Returns a ``SimulationReport``.
        - powercap: ``trace``, ``cluster``, ``truth``; a method name also needs
          ``eta`` (and takes ``models``, default the truth, and ``time_limit``);
          a policy has ``decide(now_s, jobs, cluster)``. Returns a ``SimResult``.
        - tuning: ``instance`` (and ``seed``); a policy has ``next_config()`` and
          ``observe(...)``. Returns the scored replay as a ``Result``.
    """
    hooks = family_hooks(family)
    if hooks.simulate is None:
        with_one = [f for f in families() if family_hooks(f).simulate is not None]
        raise ValueError(
            f"family {family!r} has no simulator; families with one: {', '.join(with_one)}"
        )
    return hooks.simulate(method, **scenario)
