"""Zeus keeps finishing recurrences when runs miss the target (found by tests/properties)."""

from __future__ import annotations

import energyopt
from energyopt.core.status import TerminationReason
from energyopt.tuning.instance import TuningInstance


def test_an_arm_that_stops_cheaply_at_max_epochs_is_not_chosen_forever():
    # b = 1 always reaches the target in 1 epoch of 2 s; b = 2, 3, 4 never do, and stop at
    # max_epochs = 1 after 1 s. eta = 0: cost = 50 W x time, so a failed run (50) looks
    # cheaper than a success (100). Observing that cost made Thompson Sampling pick the
    # failing arm 20 times in a row (ReplayError); a failed run now counts its own cost
    # plus the cheapest success seen (50 + 100), which is what choosing it cost.
    inst = TuningInstance(
        name="cheap failures",
        gpu="simulated",
        batch_sizes=(1, 2, 3, 4),
        power_limits_w=(50.0,),
        default_batch_size=4,
        epoch_time_s=((2.0,), (1.0,), (1.0,), (1.0,)),
        avg_power_w=((10.0,),) * 4,
        target_epochs=((1,), (None,), (None,), (None,)),
        eta=0.0,
        beta=None,
        recurrences=6,
        max_epochs=1,
    )
    for seed in range(5):
        r = energyopt.solve(inst, "zeus", seed=seed)
        assert r.termination is TerminationReason.COMPLETED, r.message


def test_a_run_that_costs_exactly_the_early_stopping_threshold_finishes():
    # beta = 1: the threshold is the cheapest recurrence seen, 3 epochs of b = 2 at 51 W
    # (16.8715... J). Rerunning that configuration costs exactly the threshold, but
    # threshold // epoch_cost rounded to 2 epochs, so every rerun was stopped early.
    inst = TuningInstance(
        name="threshold equality",
        gpu="simulated",
        batch_sizes=(1, 2, 3),
        power_limits_w=(50.0, 51.0, 52.0),
        default_batch_size=1,
        epoch_time_s=((2.0, 1.0, 2.0), (1.0, 0.4375, 1.0), (1.0, 1.0, 1.0)),
        avg_power_w=((10.0, 17.0, 10.0), (10.0, 12.85448708759182, 10.0), (10.0, 10.0, 10.0)),
        target_epochs=((1,), (3,), (None,)),
        eta=1.0,
        beta=1.0,
        recurrences=5,
        max_epochs=3,
    )
    r = energyopt.solve(inst, "zeus", seed=0)
    assert r.termination is TerminationReason.COMPLETED, r.message


def test_sizes_that_reached_the_target_earlier_survive_a_round_without_success():
    # Round 1 from b0 = 3: 3, 2, 1 reach the target, 4 fails; b0 becomes 1 (cheapest).
    # Round 2: b = 1 misses (one path of two fails), b = 2 is stopped early (its epoch
    # costs 100 > beta x 50). No success in the round: Thompson Sampling used to start on
    # the one size not seen failing, 3, which early stopping always stops, until the
    # replay gave up. It now starts on the sizes seen reaching the target: 1, 2, 3.
    from energyopt.tuning.bandit import PruningExplorer

    inst = TuningInstance(
        name="unlucky second round",
        gpu="simulated",
        batch_sizes=(1, 2, 3, 4),
        power_limits_w=(50.0,),
        default_batch_size=3,
        epoch_time_s=((1.0,), (2.0,), (2.0,), (1.0,)),
        avg_power_w=((10.0,),) * 4,
        target_epochs=((1, None), (1, 1), (1, None), (None, None)),
        eta=0.0,
        beta=1.5,
        recurrences=4,
        max_epochs=1,
    )
    r = energyopt.solve(inst, "zeus", seed=2)
    assert r.termination is TerminationReason.COMPLETED, r.message
    ex = PruningExplorer([1, 2, 3, 4], default=3)
    for b, ok in ((3, True), (2, True), (1, True), (4, False), (1, False), (2, False)):
        assert ex.next_batch_size() == b
        ex.report(b, 1.0 if b == 1 else 2.0, ok)
    assert ex.done and ex.survivors == [1, 2, 3]
