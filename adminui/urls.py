"""The console under /console/. Every view except login/logout goes through
adminui.access.console_view (tests/adminui/test_access.py checks)."""

from django.urls import path

from adminui.views import apikeys, audit, auth, dashboard, exports, sections, tenant_settings, trails

app_name = "adminui"

urlpatterns = [
    path("login/", auth.login, name="login"),
    path("logout/", auth.logout, name="logout"),
    path("", dashboard.dashboard, name="dashboard"),
    path("trails/", trails.trail_list, name="trails"),
    path("trails/actions/", trails.trail_action, name="trail_action"),
    path("trails/<uuid:trail_id>/", trails.trail_detail, name="trail"),
    path("sections/", sections.section_list, name="sections"),
    path("sections/detail/", sections.section_detail, name="section"),
    path("settings/", tenant_settings.tenant_settings, name="settings"),
    path("settings/calibration/apply/", tenant_settings.calibration_apply, name="calibration_apply"),
    path("api-keys/", apikeys.api_keys, name="apikeys"),
    path("api-keys/<uuid:key_id>/revoke/", apikeys.api_key_revoke, name="apikey_revoke"),
    path("api-keys/<uuid:key_id>/permissions/", apikeys.api_key_permissions, name="apikey_permissions"),
    path("audit/", audit.audit_log, name="audit"),
    path("exports/", exports.export_list, name="exports"),
    path("exports/<uuid:job_id>/", exports.export_detail, name="export"),
    path("exports/<uuid:job_id>/download/", exports.export_download, name="export_download"),
    path("subjects/erase/", exports.subject_erase, name="subject_erase"),
    path("subjects/erase/<uuid:job_id>/", exports.subject_erase_detail, name="subject_erase_job"),
]
