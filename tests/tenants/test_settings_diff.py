"""The settings diff (tenants.settings_diff): one definition of what changed and how the audit
says it, for the settings page, tenant_settings_update and the calibration. No database."""

from __future__ import annotations

from types import SimpleNamespace

from tenants.settings_diff import SECRET_CHANGED, settings_audit_details, settings_changed, settings_snapshot


def test_changed_fields_in_order_and_the_audit_details():
    before = {"similarity_threshold": 0.8, "resolver_secret": "old", "trail_ttl_days": 30, "match_mode": "hybrid"}
    after = {"similarity_threshold": 0.85, "resolver_secret": "new", "trail_ttl_days": 30, "match_mode": "lexical"}
    assert settings_changed(before, after) == ["similarity_threshold", "resolver_secret", "match_mode"]
    assert settings_audit_details(before, after) == {
        "similarity_threshold": {"old": 0.8, "new": 0.85},
        "resolver_secret": SECRET_CHANGED,
        "match_mode": {"old": "hybrid", "new": "lexical"},
    }


def test_a_secret_never_shows_its_values_and_nothing_changed_is_empty():
    details = settings_audit_details({"resolver_secret": "s3cret"}, {"resolver_secret": ""})
    assert details == {"resolver_secret": "(changed)"} and "s3cret" not in str(details)
    assert settings_audit_details({"trail_ttl_days": 7}, {"trail_ttl_days": 7}) == {}


def test_snapshot_reads_the_named_fields():
    tenant = SimpleNamespace(trail_ttl_days=7, coverage_floor=0.3, slug="acme")
    assert settings_snapshot(tenant, ("coverage_floor", "trail_ttl_days")) == {"coverage_floor": 0.3,
                                                                                "trail_ttl_days": 7}
