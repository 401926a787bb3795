from django.urls import include, path

from api.views.health import healthz

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("api/v1/", include("api.urls")),
    path("console/", include("adminui.urls")),
]
