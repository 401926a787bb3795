from django.apps import AppConfig


class TenantsConfig(AppConfig):
    name = "tenants"

    def ready(self) -> None:
        # Counts failed console logins and audits logins (signal receivers).
        from tenants import login_guard  # noqa: F401
