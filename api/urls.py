from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from api.views import core, exports

urlpatterns = [
    path("sections", core.SectionsView.as_view(), name="api-sections"),
    # Section ids may hold "/", "#" and ":" (url-encoded): the path converter keeps slashes.
    path("sections/<path:section_id>", core.SectionDetailView.as_view(), name="api-section"),
    path("trails", core.TrailsView.as_view(), name="api-trails"),
    path("trails/<str:trail_id>", core.TrailDetailView.as_view(), name="api-trail"),
    path("recall", core.RecallView.as_view(), name="api-recall"),
    path("recalls/<str:recall_id>/feedback", core.FeedbackView.as_view(), name="api-recall-feedback"),
    path("stats", core.StatsView.as_view(), name="api-stats"),
    path("subjects/<path:subject>", core.SubjectView.as_view(), name="api-subject"),
    path("exports", exports.ExportsView.as_view(), name="api-exports"),
    path("exports/<str:export_id>", exports.ExportDetailView.as_view(), name="api-export"),
    path("exports/<str:export_id>/download", exports.ExportDownloadView.as_view(), name="api-export-download"),
    path("schema/", SpectacularAPIView.as_view(authentication_classes=[], permission_classes=[]), name="api-schema"),
    # The split view serves its bootstrap as a script file (no inline script); the assets come
    # from drf-spectacular-sidecar, served here (config/security.py: no third-party host).
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema", authentication_classes=[],
                                                 permission_classes=[]), name="api-docs"),
]
