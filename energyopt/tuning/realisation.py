"""One realisation of a tuning trace: common random numbers for every method of a cell.

A replay samples one recorded training path per run (paper Sec. 6.1). To compare
methods like with like, the path is not drawn run by run from a shared stream (then
two policies that run different batch sizes see different draws) but read from a
fixed table indexed by ``(recurrence t, batch size b, attempt k)``: the ``k``-th run
of ``b`` within recurrence ``t`` (runs that execute, counted from 0) uses path
``path(t, b, k)``, the same for every policy replayed with the same seed. The draws
are uniform over the recorded paths of ``b``, as in the authors' simulator.

On a realisation two references are computed (:func:`references`):

* the **clairvoyant lower bound** (Eq. 14): per recurrence, the least any policy can pay.
  A recurrence ends with a successful run of some ``b`` at its attempt ``k``; its
  ``k`` earlier runs of ``b`` trained at least one epoch each, and no epoch of ``b``
  costs less than ``EpochCost(b, p*(b))`` (a profiled first epoch costs the mean over
  the limits, which is no less), so the recurrence costs at least
  ``min_{b, k} (k + Epochs(path(t, b, k))) * EpochCost(b, p*(b))`` over the ``(b, k)``
  whose path reaches the target within ``max_epochs``. Summed over ``t`` this is a
  proven lower bound on the realised cost of every policy on this realisation.
* the **best fixed arm in hindsight** (Eq. 15, the Zeus paper's regret reference): the
  batch size which, run at its best power limit every recurrence without early
  stopping, costs least on this realisation. A run of a fixed arm that misses the
  target trains ``max_epochs`` and is retried.

The table is drawn in blocks of :data:`BLOCK` recurrences, each from its own seed
(``SeedSequence(seed, spawn_key=(_TAG, block, attempt))``), so a block is reproducible
alone, a long replay holds only the few blocks it is using, and the references draw a
later attempt only for the recurrences where it could matter.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np

from energyopt.tuning.instance import TuningInstance

#: Runs of one batch size within one recurrence that the table covers (the replay gives
#: up a recurrence after this many runs: :data:`energyopt.tuning.replay.MAX_TRIES`).
ATTEMPTS = 20
#: Recurrences per block of the table.
BLOCK = 1024
#: First spawn key of the table's streams: keeps them apart from the streams the methods
#: spawn from the same seed (``SeedSequence(seed).spawn``, spawn keys (0,), (1,), ...).
_TAG = 0x7265616C


class Realisation:
    """The sampled paths of one seed for one instance (see the module docstring)."""

    def __init__(self, instance: TuningInstance, seed: int) -> None:
        if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
            raise ValueError(f"seed = {seed!r}: must be a non-negative integer")
        self.instance = instance
        self.seed = int(seed)
        self._n_paths = np.array([len(p) for p in instance.target_epochs], dtype=np.int64)
        # Epochs to target of every path, inf where it misses within max_epochs.
        width = int(self._n_paths.max())
        epochs = np.full((len(instance.batch_sizes), width), np.inf)
        for i, paths in enumerate(instance.target_epochs):
            for r, e in enumerate(paths):
                if e is not None and e <= instance.max_epochs:
                    epochs[i, r] = e
        self._epochs = epochs
        self._rows = np.arange(len(instance.batch_sizes))
        self._level = functools.lru_cache(maxsize=4 * ATTEMPTS)(self._draw)

    def _draw(self, block: int, attempt: int) -> np.ndarray:
        """Path indices of attempt ``attempt`` in recurrences ``block * BLOCK ...``:
        shape (BLOCK, |B|). Each (block, attempt) has its own stream, so the references
        draw the later attempts only where they matter."""
        seq = np.random.SeedSequence(self.seed, spawn_key=(_TAG, block, attempt))
        u = np.random.default_rng(seq).random((BLOCK, len(self._n_paths)))
        paths = np.floor(u * self._n_paths).astype(np.int64)
        return np.minimum(paths, self._n_paths - 1)

    def path(self, recurrence: int, batch_index: int, attempt: int) -> int:
        """The recorded path that run ``attempt`` of batch size ``batch_index`` in
        ``recurrence`` trains on."""
        if not 0 <= attempt < ATTEMPTS:
            raise IndexError(f"attempt {attempt} outside [0, {ATTEMPTS})")
        block, row = divmod(int(recurrence), BLOCK)
        return int(self._level(block, attempt)[row, batch_index])

    def epochs(self, start: int, stop: int, attempt: int) -> np.ndarray:
        """Epochs to target (inf: misses) of attempt ``attempt`` of every batch size in
        recurrences ``start <= t < stop``: shape (stop - start, |B|)."""
        parts = [np.empty((0, len(self._n_paths)))]
        t = start
        while t < stop:
            block, row = divmod(t, BLOCK)
            end = min(stop, (block + 1) * BLOCK)
            paths = self._level(block, attempt)[row : row + end - t]
            parts.append(self._epochs[self._rows, paths])
            t = end
        return np.concatenate(parts)


def best_epoch_costs(inst: TuningInstance) -> tuple[np.ndarray, np.ndarray]:
    """Per batch size: the least epoch cost over P and the power limit giving it
    (Eq. 7; ties to the larger limit, as :func:`~energyopt.tuning.evaluator.exact_reference`)."""
    costs, limits = [], []
    for b in inst.batch_sizes:
        ec = {p: inst.epoch_cost(b, p) for p in inst.power_limits_w}
        p = min(ec, key=lambda q: (ec[q], -q))
        costs.append(ec[p])
        limits.append(p)
    return np.array(costs), np.array(limits)


def fixed_arm_costs(refs: References, batch_index: int, epoch_cost_ratio: float) -> np.ndarray:
    """Realised cost of each recurrence of ``refs`` that always runs batch size
    ``batch_index`` at a power limit whose epoch costs ``epoch_cost_ratio`` times the
    batch size's cheapest, without early stopping or profiling (inf where all
    :data:`ATTEMPTS` runs miss the target): the epochs trained do not depend on the
    limit, so the cost scales."""
    return refs.per_arm[:, batch_index] * epoch_cost_ratio


@dataclasses.dataclass(frozen=True)
class References:
    """The two references of one realisation (see the module docstring)."""

    clairvoyant: np.ndarray
    """Lower bound on the cost of each recurrence (any policy)."""
    per_arm: np.ndarray
    """Cost of each recurrence (rows) under each batch size fixed at its best power
    limit (columns)."""
    power_limits_w: np.ndarray
    """Each batch size's best power limit."""
    batch_sizes: tuple[int, ...]

    @property
    def bound(self) -> float:
        """The clairvoyant lower bound on the cumulative cost."""
        return float(self.clairvoyant.sum())

    @functools.cached_property
    def _arm(self) -> int | None:
        totals = self.per_arm.sum(axis=0)
        if not np.isfinite(totals).any():
            return None
        return int(np.argmin(totals))

    @property
    def hindsight(self) -> np.ndarray:
        """Cost of each recurrence under the best fixed arm in hindsight (inf: none
        reaches the target in every recurrence)."""
        i = self._arm
        return np.full(len(self.per_arm), math.inf) if i is None else self.per_arm[:, i]

    @property
    def hindsight_total(self) -> float:
        return float(self.hindsight.sum())

    @property
    def hindsight_batch_size(self) -> int | None:
        """The best fixed arm's batch size (None: every arm misses some recurrence
        :data:`ATTEMPTS` times)."""
        return None if self._arm is None else self.batch_sizes[self._arm]

    @property
    def hindsight_power_limit_w(self) -> float | None:
        return None if self._arm is None else float(self.power_limits_w[self._arm])

    def head(self, recurrences: int) -> References:
        """The references of the first ``recurrences`` recurrences alone."""
        k = int(recurrences)
        return References(
            self.clairvoyant[:k], self.per_arm[:k], self.power_limits_w, self.batch_sizes
        )


#: Recurrences per chunk when summing a long realisation.
_CHUNK = 16 * BLOCK


def _chunk_references(
    real: Realisation, start: int, stop: int, ec: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(clairvoyant bound per recurrence, epochs of each fixed arm per recurrence) for
    ``start <= t < stop``, drawing attempt ``k`` only where it can still matter."""
    inst = real.instance
    n, width = stop - start, len(ec)
    least = np.array(
        [min((e for e in p if e is not None and e <= inst.max_epochs), default=np.inf)
         for p in inst.target_epochs]
    )  # fmt: skip
    lower = np.full(n, np.inf)
    fixed = np.full((n, width), np.inf)
    for k in range(ATTEMPTS):
        # Attempt k of b costs at least (k + least epochs of b) epochs of b: draw it only
        # where that could lower the bound or where some fixed arm has not reached yet.
        useful = ((k + least) * ec)[None, :] < lower[:, None]
        open_ = ~np.isfinite(fixed) & np.isfinite(least)
        if not (useful.any() or open_.any()):
            break
        e = real.epochs(start, stop, k)
        lower = np.minimum(lower, np.min((k + e) * ec, axis=1))
        hit = open_ & np.isfinite(e)
        fixed[hit] = (k * float(inst.max_epochs) + e)[hit]
    return lower, fixed * ec


def references(real: Realisation, recurrences: int | None = None) -> References:
    """The clairvoyant bound and every fixed arm's cost over the first ``recurrences``
    recurrences (all of the instance's by default)."""
    inst = real.instance
    T = inst.recurrences if recurrences is None else int(recurrences)
    ec, limits = best_epoch_costs(inst)
    lower, arms = [np.empty(0)], [np.empty((0, len(ec)))]
    for start in range(0, T, _CHUNK):
        lo, arm = _chunk_references(real, start, min(T, start + _CHUNK), ec)
        lower.append(lo)
        arms.append(arm)
    return References(np.concatenate(lower), np.concatenate(arms), limits, inst.batch_sizes)
