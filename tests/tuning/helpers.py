"""Tiny hand-checkable instances for the tuning tests."""

from __future__ import annotations

from energyopt.tuning import TuningInstance


def tiny(
    target_epochs=((4, 6), (8, 12)),
    *,
    beta: float | None = 2.0,
    recurrences: int = 4,
    max_epochs: int = 40,
) -> TuningInstance:
    """B = (16, 32), P = (100, 200) W, b0 = 32, eta = 0.5, MAXPOWER = 200 W.

    Epoch costs (0.5 * AvgPower + 0.5 * 200) * time_per_epoch, by hand:
      b16 @ 100 W: (47.5 + 100) * 20 = 2950     b16 @ 200 W: (75 + 100) * 12 = 2100
      b32 @ 100 W: (50 + 100) * 10  = 1500      b32 @ 200 W: (95 + 100) * 8  = 1560
    """
    return TuningInstance(
        name="tiny",
        gpu="hand",
        batch_sizes=(16, 32),
        power_limits_w=(100.0, 200.0),
        default_batch_size=32,
        epoch_time_s=((20.0, 12.0), (10.0, 8.0)),
        avg_power_w=((95.0, 150.0), (100.0, 190.0)),
        target_epochs=target_epochs,
        eta=0.5,
        beta=beta,
        recurrences=recurrences,
        max_epochs=max_epochs,
        source={"kind": "hand-made test instance"},
    )
