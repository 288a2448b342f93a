"""Tuning methods in the registry (family ``"tuning"``).

How the family fits the :class:`~energyopt.core.result.Result` contract
(see docs/tuning.md):

* an instance is one recurring job: its trace tables plus eta, beta, b0,
  max_epochs and the number of recurrences T;
* every method replays the job on the **realisation** of its seed
  (:class:`~energyopt.tuning.realisation.Realisation`: common random numbers, so
  that for a seed every method trains on the same sampled path for each batch
  size, recurrence and attempt); its objective is the realised cumulative cost
  over T recurrences in joules (Eq. 4), computed by
  :func:`energyopt.tuning.evaluator.evaluate`;
* its ``bound`` is the **clairvoyant lower bound** of that realisation (per
  recurrence, the least any policy can pay; proven in
  :mod:`energyopt.tuning.realisation`), so ``Result.gap`` is against it and no
  method can come in below it (the scorer raises otherwise);
* ``extra`` holds the **best fixed arm in hindsight** on the same realisation (the
  Zeus paper's regret reference), the regret curves against both references, and
  the optimum in expectation ``T * c_star`` (Eqs. 6-7, a documented figure, not a
  bound: a realised replay may cost less);
* no method is exact: ``best-expected-arm`` replays the configuration that is
  optimal *in expectation* (it knows the trace's distribution, not the realisation),
  so it may lose to a policy on a given realisation.
"""

from __future__ import annotations

import math

from energyopt.core import methodoptions as O
from energyopt.core.registry import register
from energyopt.core.result import Result
from energyopt.tuning.evaluator import exact_reference
from energyopt.tuning.hooks import HOOKS
from energyopt.tuning.instance import TuningInstance
from energyopt.tuning.policies import DefaultPolicy, FixedArmPolicy, GridSearchPolicy, ZeusPolicy
from energyopt.tuning.policyreplay import draws, replay_method
from energyopt.tuning.power import PowerLimitProbe

FAMILY = HOOKS.name


#: Concurrent replay: mean seconds between submissions (Poisson arrivals).
_INTERARRIVAL = O.number(
    "interarrival_s",
    None,
    "mean s between submissions (null: one after another)",
    above=0.0,
    nullable=True,
)


@register(
    FAMILY,
    "best-expected-arm",
    exact=False,
    description="Replays the (b, p) of least expected cost over the trace (Eqs. 6-7): "
    "a distribution oracle, not an optimum of the realisation",
)
def solve_best_expected_arm(
    instance: TuningInstance, *, time_limit: float | None = None, seed: int | None = None
) -> Result:
    """Run the arm optimal in expectation (Eqs. 6-7) every recurrence, no early stopping.

    It knows the trace's distribution, not the realisation, so a learning policy may
    beat it on a given seed. ``extra["expected_optimum"]`` is ``T * c_star``, its
    expected cost (the paper's regret reference).
    """
    ref = exact_reference(instance)
    policy = FixedArmPolicy(instance, ref.batch_size, ref.power_limit_w, "best-expected-arm")
    best_p = {str(b): p for b, p in ref.best_power_limit_w.items()}
    return replay_method(
        HOOKS,
        instance,
        "best-expected-arm",
        policy,
        draws(instance, seed),
        time_limit=time_limit,
        extra=lambda: {
            "cost_per_recurrence_expected": ref.c_star,
            "configurations": len(ref.expected_cost),
            "best_power_limit_w": best_p,
        },
    )


@register(
    FAMILY,
    "zeus",
    exact=False,
    description="Zeus: pruning + Gaussian Thompson Sampling, JIT power limit",
    options=(
        O.integer("window", 0, "observations kept per arm (0: all)", minimum=0),
        O.number("prior_mean", 0.0, "prior mean of an arm's cost"),
        O.number("prior_var", None, "prior variance (null: flat prior)", above=0.0, nullable=True),
        O.integer("pruning_rounds", 2, "rounds of pruning exploration", minimum=1),
        _INTERARRIVAL,
        O.instance_of("probe", PowerLimitProbe, "live power-limit source (Python only)"),
    ),
)
def solve_zeus(
    instance: TuningInstance,
    *,
    time_limit: float | None = None,
    seed: int | None = None,
    window: int,
    prior_mean: float,
    prior_var: float | None,
    pruning_rounds: int,
    interarrival_s: float | None,
    probe: PowerLimitProbe | None,
) -> Result:
    """Replay Zeus (Algorithm 3 with the JIT optimizer of Sec. 4.2) on the trace.

    Options: ``window`` (observations kept per arm, 0 = all), ``prior_mean`` and
    ``prior_var`` (None = flat prior), ``pruning_rounds``, ``interarrival_s``
    (mean seconds between submissions: concurrent replay with Poisson arrivals;
    None = one recurrence after another), ``probe`` (live power-limit source for
    the JIT profiler; default: the trace's power table).
    """
    d = draws(instance, seed)
    var = math.inf if prior_var is None else float(prior_var)
    policy = ZeusPolicy(
        instance,
        d.policy,
        probe=probe,
        window=window,
        prior_mean=prior_mean,
        prior_var=var,
        pruning_rounds=pruning_rounds,
    )
    return replay_method(
        HOOKS,
        instance,
        "zeus",
        policy,
        d,
        time_limit=time_limit,
        interarrival_s=interarrival_s,
        extra=lambda: {
            "pruning_order": policy.explorer.order,
            "arms_after_pruning": list(policy.mab.arms) if policy.mab is not None else [],
        },
    )


@register(
    FAMILY,
    "grid-search",
    exact=False,
    description="Grid search over (b, p) with pruning",
    options=(O.flag("early_stopping", False, "stop a run early when it cannot win"), _INTERARRIVAL),
)
def solve_grid(
    instance: TuningInstance,
    *,
    time_limit: float | None = None,
    seed: int | None = None,
    early_stopping: bool,
    interarrival_s: float | None,
) -> Result:
    """Replay grid search with pruning (paper Sec. 6.1, baseline 2)."""
    policy = GridSearchPolicy(instance, early_stopping=early_stopping)
    return replay_method(
        HOOKS,
        instance,
        "grid-search",
        policy,
        draws(instance, seed),
        time_limit=time_limit,
        interarrival_s=interarrival_s,
        extra=lambda: {"pruned": sorted(policy.pruned)},
    )


@register(FAMILY, "default", exact=False, description="Default: b0 at the maximum power limit")
def solve_default(
    instance: TuningInstance, *, time_limit: float | None = None, seed: int | None = None
) -> Result:
    """Replay Default (b0, MAXPOWER) (paper Sec. 6.1, baseline 1)."""
    return replay_method(
        HOOKS,
        instance,
        "default",
        DefaultPolicy(instance),
        draws(instance, seed),
        time_limit=time_limit,
    )
