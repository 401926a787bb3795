from django.urls import path

from adminui import views

app_name = "adminui"

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
]
