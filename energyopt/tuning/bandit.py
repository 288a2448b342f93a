"""Gaussian Thompson Sampling over batch sizes with pruning (paper Algorithms 1-3).

* :func:`posterior` is Algorithm 2 (Observe): the conjugate Gaussian update of
  the belief about an arm's mean cost, with the cost variance learned from the
  arm's observations (Sec. 4.4).
* :class:`GaussianThompsonSampling` keeps each arm's (windowed) observations
  and samples from the beliefs to pick the next arm (Algorithm 1, Predict).
* :class:`PruningExplorer` is the exploration phase of Algorithm 3 (lines 1-9):
  b0, then smaller batch sizes until one fails, then larger ones until one
  fails; keep those that converged; restart from the cheapest; twice.

Costs are minimized (the paper's convention), not rewards maximized.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Sequence

import numpy as np


def posterior(
    costs: Sequence[float], prior_mean: float = 0.0, prior_var: float = math.inf
) -> tuple[float, float]:
    """Algorithm 2, lines 2-4: belief (mean, variance) about an arm's mean cost.

    ``var~ = Var(C_b)`` (population variance of the observed costs),
    ``sigma_b^2 = (1 / sigma_0^2 + |C_b| / var~)^-1`` and
    ``mu_b = sigma_b^2 (mu_0 / sigma_0^2 + Sum(C_b) / var~)``.

    Parameters
    ----------
    costs
        The arm's observed costs ``C_b`` (after windowing); at least one.
    prior_mean, prior_var
        ``mu_0`` and ``sigma_0^2``; ``prior_var = inf`` is the flat prior (the
        paper's default: zero mean, infinite variance).

    Returns
    -------
    (mean, variance)
        When ``var~ = 0`` (one observation, or identical ones) the observations
        carry infinite precision and the belief collapses onto their mean
        (variance 0), the limit of the formulas; the Zeus implementation does
        the same.
    """
    c = np.asarray(costs, dtype=float)
    if c.size == 0:
        raise ValueError("posterior needs at least one observed cost")
    if not prior_var > 0:
        raise ValueError(f"prior_var = {prior_var!r}: must be > 0 (inf for a flat prior)")
    var_obs = float(np.var(c))
    if var_obs == 0.0:
        return float(c.mean()), 0.0
    prior_prec = 0.0 if math.isinf(prior_var) else 1.0 / prior_var
    post_var = 1.0 / (prior_prec + c.size / var_obs)
    post_mean = post_var * (prior_mean * prior_prec + float(c.sum()) / var_obs)
    return post_mean, post_var


class GaussianThompsonSampling:
    """Arms with Gaussian beliefs about their mean cost (Algorithms 1 and 2).

    Parameters
    ----------
    arms
        The arms (batch sizes).
    rng
        Random generator used for the Thompson samples.
    prior_mean, prior_var
        Belief prior; ``prior_var = inf`` is the flat prior.
    window
        Keep only each arm's ``window`` most recent observations (data drift,
        Sec. 4.4); 0 keeps all.
    """

    def __init__(
        self,
        arms: Iterable[int],
        rng: np.random.Generator,
        *,
        prior_mean: float = 0.0,
        prior_var: float = math.inf,
        window: int = 0,
    ) -> None:
        self.arms = tuple(int(a) for a in arms)
        if not self.arms:
            raise ValueError("no arms: every batch size was pruned")
        if window < 0:
            raise ValueError(f"window = {window}: must be >= 0 (0 keeps every observation)")
        self.rng = rng
        self.prior_mean = float(prior_mean)
        self.prior_var = float(prior_var)
        self.window = int(window)
        self.costs: dict[int, deque[float]] = {
            a: deque(maxlen=self.window or None) for a in self.arms
        }

    def observe(self, arm: int, cost: float) -> None:
        """Algorithm 2, line 1: add ``cost`` to ``C_arm`` (the oldest leaves past the window)."""
        if arm in self.costs:
            self.costs[arm].append(float(cost))

    def belief(self, arm: int) -> tuple[float, float]:
        """Current (mean, variance) of the belief about ``arm``'s mean cost."""
        c = self.costs[arm]
        if not c:
            return self.prior_mean, self.prior_var
        return posterior(list(c), self.prior_mean, self.prior_var)

    def predict(self) -> int:
        """Algorithm 1: sample each arm's mean cost from its belief; return the smallest.

        Arms without observations under a flat prior cannot be sampled; they are
        returned first (in a random order) so that every arm is observed once.
        """
        order = self.rng.permutation(len(self.arms))
        if math.isinf(self.prior_var):
            for k in order:
                if not self.costs[self.arms[k]]:
                    return self.arms[k]
        best, best_theta = self.arms[order[0]], math.inf
        for k in order:
            arm = self.arms[k]
            mean, var = self.belief(arm)
            theta = self.rng.normal(mean, math.sqrt(var)) if var > 0 else mean
            if theta < best_theta:
                best, best_theta = arm, theta
        return best


class PruningExplorer:
    """Exploration with pruning, Algorithm 3 lines 1-9.

    Hand out batch sizes with :meth:`next_batch_size`; report each one's outcome
    with :meth:`report`. A round explores ``b0`` and the smaller batch sizes in
    descending order until one fails to reach the target, then the larger ones
    in ascending order until one fails. The batch sizes that reached the target
    form the next round's set and the cheapest of them its ``b0``. After
    ``rounds`` rounds, :attr:`survivors` holds the arms of Thompson Sampling.

    Parameters
    ----------
    batch_sizes
        The set B.
    default
        ``b0``.
    rounds
        Number of pruning rounds (2 in the paper).
    """

    def __init__(self, batch_sizes: Iterable[int], default: int, rounds: int = 2) -> None:
        self.sizes = sorted(int(b) for b in batch_sizes)
        if int(default) not in self.sizes:
            raise ValueError(f"default batch size {default} not in {self.sizes}")
        if rounds < 1:
            raise ValueError(f"rounds = {rounds}: must be >= 1")
        self.default = int(default)
        self.rounds = rounds
        self.round = 0
        self.pending: int | None = None
        self.done = False
        self.survivors: list[int] = []
        self.failed: set[int] = set()  # sizes seen missing the target
        self.reached: set[int] = set()  # sizes seen reaching it, in any round
        self.order: list[int] = []  # every batch size handed out, in order
        self._start_round()

    def _start_round(self) -> None:
        idx = self.sizes.index(self.default)
        self._down = sorted(self.sizes[: idx + 1], reverse=True)
        self._up = sorted(self.sizes[idx + 1 :])
        self._queue = list(self._down)
        self._round_b0 = self.default
        self._phase = "down"
        self._good: list[int] = []
        self._best = math.inf

    def next_batch_size(self) -> int | None:
        """The batch size to explore next; ``None`` when exploration is over.

        Raises RuntimeError while a handed-out batch size awaits its report.
        """
        if self.done:
            return None
        if self.pending is not None:
            raise RuntimeError(f"batch size {self.pending} awaits its report")
        self.pending = self._queue[0]
        self.order.append(self.pending)
        return self.pending

    def report(self, batch_size: int, cost: float, reached: bool) -> bool:
        """Feed back the outcome of the pending batch size.

        Returns False (and changes nothing) when ``batch_size`` is not the one
        awaited: with concurrent submissions, other batch sizes finish in between.
        """
        if self.pending is None or int(batch_size) != self.pending:
            return False
        self.pending = None
        self._queue.pop(0)
        if reached:
            self.reached.add(int(batch_size))
            self._good.append(int(batch_size))
            if cost < self._best:
                self._best, self.default = cost, int(batch_size)
        else:
            self.failed.add(int(batch_size))
        # b0's own failure does not end the descent: the smaller sizes are explored
        # until one of *them* fails (issue 12, item 7: otherwise nothing is learned).
        b0_failed = not reached and int(batch_size) == self._round_b0
        if (not reached and not b0_failed) or not self._queue:
            if self._phase == "down" and self._up:
                self._phase, self._queue = "up", list(self._up)
            else:
                self._end_round()
        return True

    def _end_round(self) -> None:
        self.round += 1
        if not self._good:
            # No batch size reached the target this round (the paper is silent): Thompson
            # Sampling starts on the sizes seen reaching it in an earlier round (a path or
            # early stopping can fail a good size once), else on those not seen failing,
            # else on all.
            self.done = True
            self.survivors = (
                [b for b in self.sizes if b in self.reached]
                or [b for b in self.sizes if b not in self.failed]
                or list(self.sizes)
            )
            return
        self.sizes = sorted(self._good)
        if self.round >= self.rounds:
            self.done = True
            self.survivors = list(self.sizes)
        else:
            self._start_round()
