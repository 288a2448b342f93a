"""The exponential fit is remembered within a solve (energyopt/pipeline/crawl/costmodels.py)."""

import numpy as np

from energyopt.pipeline.crawl import costmodels


def test_remembered_fits_fit_each_set_of_points_once(monkeypatch):
    calls = []
    real = costmodels._fit_exponential
    monkeypatch.setattr(costmodels, "_fit_exponential", lambda t, e: calls.append(1) or real(t, e))
    t = np.array([1.0, 1.5, 2.0, 3.0])
    e = np.array([10.0, 7.0, 5.5, 5.0])
    plain = costmodels.fit_exponential(t, e)
    with costmodels.remembered_fits():
        first = costmodels.fit_exponential(t, e)
        again = costmodels.fit_exponential(t.copy(), list(e))  # same points, other objects
        other = costmodels.fit_exponential(t, e + 1.0)
    after = costmodels.fit_exponential(t, e)
    # Outside the block every call fits (2), inside once per set of points (2).
    assert len(calls) == 4
    assert first == again == plain == after
    assert other != first
    assert costmodels._FITS is None
