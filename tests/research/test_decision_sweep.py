"""``research.section_route``'s random pairs of distinct questions and ``research.decision_sweep``'s
class of a prefetch and table."""

from __future__ import annotations

import numpy as np
import pytest

from research.decision_sweep import CLASSES, classify, table
from research.section_route import random_pair_cosines


def test_random_pairs_never_pair_a_question_with_itself() -> None:
    # Orthonormal rows: any two distinct ones have cosine 0, a row with itself 1.
    cosines = random_pair_cosines(np.eye(3), pairs=500, seed=1)
    assert cosines.shape == (500,) and np.all(cosines == 0.0)
    with pytest.raises(ValueError):
        random_pair_cosines(np.eye(1), pairs=1)


def test_a_prefetch_is_classed_by_what_it_served() -> None:
    gold, other = {"p#gold"}, {"p#other"}
    assert classify(kind="same", own=True, answered=False, named=gold, served=gold) == "same_own"
    assert classify(kind="same", own=False, answered=False, named=gold, served=gold | other) == "same_right"
    assert classify(kind="same", own=False, answered=False, named=gold, served=other) == "same_wrong"
    assert classify(kind="close", own=True, answered=True, named=gold, served=gold) == "close_answered"
    assert classify(kind="close", own=False, answered=False, named=other, served=other) == "close_right"
    assert classify(kind="close", own=True, answered=False, named=other, served=gold) == "close_wrong"
    # A close question no section is named for: any prefetch is a wrong one.
    assert classify(kind="close", own=False, answered=False, named=set(), served=gold) == "close_wrong"


def test_the_table_has_a_row_per_side_and_floor() -> None:
    row = dict.fromkeys(CLASSES, 0) | {"close_wrong": 3}
    report = {"corpus": "flask", "field": "ambiguity_margin", "classes": list(CLASSES),
              "probes": {"held_out": {"same": 2}, "calibration": {"same": 4}},
              "values": {"0.0": {"held_out": row, "calibration": row}, "0.18": {"held_out": row, "calibration": row}}}
    lines = table(report).splitlines()
    assert len([x for x in lines if x.startswith("| held_out") or x.startswith("| calibration")]) == 4
    assert lines[2].endswith("| 3 |")


@pytest.mark.django_db(transaction=True)
def test_one_read_is_decided_at_each_value_of_the_field(make_tenant) -> None:
    # A question asked verbatim has confidence 1: served with a hint cut of 0, nothing at a hint cut
    # over 1 (a prefetch cut would not do: the trail's own question is served over any of them).
    from cachecore.services import recall_log
    from cachecore.services.sections import sections_upsert
    from cachecore.services.trails import trail_record
    from research.decision_sweep import _decider
    from tenants.caller import tenant_caller

    tenant = make_tenant()
    question = "How do I install Acme on a fresh machine?"
    sections_upsert(caller=tenant_caller(tenant), sections=[
        {"id": "doc#install", "text": "Install Acme with the installer, then run acme init on a fresh machine."}])
    trail_record(caller=tenant_caller(tenant), scope="default", query=question, steps=[], cited=["doc#install"],
                 signal={"source": "caller", "accepted": True})
    recall_log.flush()
    decisions = _decider(tenant, "hint_confidence", [0.0, 1.01])(question, "default")
    assert [str(d.outcome) for d in decisions.values()] == ["prefetch", "miss"]
    assert decisions[0.0].confidence == decisions[1.01].confidence == 1.0
    with pytest.raises(ValueError):
        _decider(tenant, "no_such_margin", [0.0])
