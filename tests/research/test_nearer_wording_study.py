"""``research.match_calibration.nearer_wording_decisions`` on rows made up here: a close question
served its item's recorded rewording is held back when the item's own trail, worded nearer the
query and citing the same section, is under the cut; another need's nearer trail is no doubt."""

from __future__ import annotations

from research.match_calibration import nearer_wording_decisions

GOLD = {"demo": {"item-a": frozenset({"doc#a"}), "item-b": frozenset({"doc#b"})}}


def _cand(trail: str, entry: str, *, similarity: float, confidence: float) -> dict:
    return {"trail_id": trail, "entry": entry, "similarity": similarity, "confidence": confidence,
            "via_sections": False, "coverage": similarity}


def _close(*candidates: dict) -> dict:
    return {"set": "demo", "kind": "twin", "answered_by_source": False, "group": "item-a",
            "item_trails": ["a-question", "a-rewording"], "source_trail": "a-question", "right_entries": [],
            "candidates": list(candidates)}


def _counts(rows: list[dict], *, rule: bool) -> dict[str, int]:
    return nearer_wording_decisions(rows, gold=GOLD, prefetch=0.88, hint=0.19, rule=rule)


def test_a_nearer_wording_of_the_same_section_under_the_cut_holds_the_further_one_back() -> None:
    row = _close(_cand("a-question", "item-a", similarity=0.92, confidence=0.4),
                 _cand("a-rewording", "item-a", similarity=0.55, confidence=0.95))
    assert _counts([row], rule=False) == {"para_n": 0, "para_own": 0, "twin_n": 1, "twin_prefetch": 1, "twin_wrong": 1}
    assert _counts([row], rule=True)["twin_prefetch"] == 0


def test_a_nearer_trail_of_another_need_or_a_confident_one_is_no_doubt() -> None:
    other_need = _close(_cand("b-question", "item-b", similarity=0.92, confidence=0.4),
                        _cand("a-rewording", "item-a", similarity=0.55, confidence=0.95))
    confident = _close(_cand("a-question", "item-a", similarity=0.92, confidence=0.9),
                       _cand("a-rewording", "item-a", similarity=0.55, confidence=0.95))
    assert _counts([other_need, confident], rule=True)["twin_prefetch"] == 2


def test_a_rewording_served_its_own_trail_counts_as_own_text() -> None:
    row = {**_close(_cand("a-rewording", "item-a", similarity=0.7, confidence=0.93)), "kind": "paraphrase",
           "answered_by_source": True}
    assert _counts([row], rule=True) == {"para_n": 1, "para_own": 1, "twin_n": 0, "twin_prefetch": 0, "twin_wrong": 0}
