from django.urls import include, path

from ops.views import healthz, metrics_view

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("metrics", metrics_view, name="metrics"),
    path("api/v1/", include("api.urls")),
    path("console/", include("adminui.urls")),
]
