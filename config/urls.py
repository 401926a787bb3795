from django.urls import include, path

from api.metrics import metrics_view
from api.views.health import healthz

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("metrics", metrics_view, name="metrics"),
    path("api/v1/", include("api.urls")),
    path("console/", include("adminui.urls")),
]
