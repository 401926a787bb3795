from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "api"

    def ready(self) -> None:
        # Registers the bearer-key scheme with drf-spectacular.
        from api import schema  # noqa: F401
