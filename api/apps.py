from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "api"

    def ready(self) -> None:
        from django.core.signals import got_request_exception

        # Registers the bearer-key scheme with drf-spectacular.
        from api import schema  # noqa: F401
        from api.middleware import mark_database_fault

        # A database fault raised outside a view (in a middleware) still answers 503 (api.middleware).
        got_request_exception.connect(mark_database_fault, dispatch_uid="api.mark_database_fault")
