"""The shipped match scorer: the file the calibration study wrote, the tenant defaults it
implies, and the sanity of its weights."""

import json

from cachecore.engine.evidence import FEATURES
from cachecore.engine.scorer import SCORER_PATH, MatchScorer, default_match_scorer
from tenants.models import (
    DEFAULT_HINT_CONFIDENCE,
    DEFAULT_PREFETCH_CONFIDENCE,
    DEFAULT_SIMILARITY_THRESHOLD,
    Tenant,
)


def test_tenant_defaults_are_the_calibrated_bands():
    scorer = default_match_scorer()
    assert (DEFAULT_SIMILARITY_THRESHOLD, DEFAULT_PREFETCH_CONFIDENCE, DEFAULT_HINT_CONFIDENCE) == (
        scorer.similarity_threshold, scorer.prefetch_confidence, scorer.hint_confidence)
    tenant = Tenant(slug="x", name="x")
    assert tenant.prefetch_confidence == scorer.prefetch_confidence
    assert 0 <= tenant.hint_confidence <= tenant.prefetch_confidence <= 1


def test_the_scorer_file_names_its_features_provenance_and_held_out_figures():
    data = json.loads(SCORER_PATH.read_text(encoding="utf-8"))
    assert tuple(data["features"]) == FEATURES
    assert data["meta"]["side"] == "calibration" and data["meta"]["pairs"]["calibration"] > 500
    auc = data["meta"]["held_out_pair_auc"]
    assert auc["scorer"] > auc["cosine"]  # the reason the scorer exists


def _vector(**values: float) -> list[float]:
    base = {f: 0.0 for f in FEATURES}
    base.update({"cosine": 0.7, "coverage": 0.6, "coverage_known": 1.0, "trigram": 0.3,
                 "content_jaccard": 0.3, "unexplained": 0.4, "unexplained_max": 0.5, "coverage_gap": 0.1})
    base.update(values)
    return [base[f] for f in FEATURES]


def test_more_evidence_for_a_match_never_lowers_the_confidence():
    scorer = default_match_scorer()
    for feature in ("cosine", "coverage"):
        assert scorer.score(_vector(**{feature: 0.9})) >= scorer.score(_vector(**{feature: 0.5})), feature
    for feature in ("unexplained", "coverage_gap", "polarity_conflict", "negation_differs", "numbers_differ",
                    "via_sections"):
        assert scorer.score(_vector(**{feature: 0.9})) <= scorer.score(_vector(**{feature: 0.1})), feature


def test_a_file_for_other_features_is_refused(tmp_path):
    data = json.loads(SCORER_PATH.read_text(encoding="utf-8"))
    data["features"] = [*data["features"][:-1], "a_feature_this_code_does_not_compute"]
    path = tmp_path / "scorer.json"
    path.write_text(json.dumps(data))
    try:
        MatchScorer.load(path)
    except ValueError as exc:
        assert "features" in str(exc)
    else:
        raise AssertionError("a scorer for other features loaded")
