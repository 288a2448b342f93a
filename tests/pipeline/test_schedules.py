import pytest

from energyopt.pipeline.schedules import BACKWARD, FORWARD, build_dag, stage_order


def test_1f1b_stage_orders_2x2():
    # Stage 0 of 2: one warm-up forward, then F1 B0, then B1. Last stage: strict alternation.
    assert stage_order("1f1b", 2, 2, 0) == [
        (FORWARD, 0),
        (FORWARD, 1),
        (BACKWARD, 0),
        (BACKWARD, 1),
    ]
    assert stage_order("1f1b", 2, 2, 1) == [
        (FORWARD, 0),
        (BACKWARD, 0),
        (FORWARD, 1),
        (BACKWARD, 1),
    ]


def test_gpipe_stage_order():
    assert stage_order("gpipe", 3, 2, 1) == [
        (FORWARD, 0),
        (FORWARD, 1),
        (BACKWARD, 1),
        (BACKWARD, 0),
    ]


@pytest.mark.parametrize("schedule", ["1f1b", "gpipe"])
@pytest.mark.parametrize("S,M", [(1, 1), (2, 3), (4, 8), (3, 2)])
def test_dag_has_every_computation_once_and_data_edges(schedule, S, M):
    comps, edges = build_dag(schedule, S, M)
    assert len(comps) == 2 * S * M
    assert len({(c.stage, c.kind, c.microbatch) for c in comps}) == 2 * S * M
    index = {(c.stage, c.kind, c.microbatch): i for i, c in enumerate(comps)}
    es = set(edges)
    for m in range(M):
        for s in range(1, S):
            assert (index[(s - 1, FORWARD, m)], index[(s, FORWARD, m)]) in es
            assert (index[(s, BACKWARD, m)], index[(s - 1, BACKWARD, m)]) in es
    assert len(es) == len(edges)


def test_bad_sizes():
    with pytest.raises(ValueError, match="num_stages"):
        build_dag("1f1b", 0, 2)
    with pytest.raises(ValueError, match="schedule"):
        build_dag("zero-bubble", 2, 2)
