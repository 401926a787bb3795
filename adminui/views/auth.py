"""Log in and out of the console (Django's auth views with the console's templates)."""

from __future__ import annotations

from django.contrib.auth import views as auth_views

login = auth_views.LoginView.as_view(template_name="adminui/login.html", redirect_authenticated_user=True)
logout = auth_views.LogoutView.as_view()
