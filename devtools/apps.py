from django.apps import AppConfig


class DevtoolsConfig(AppConfig):
    """The development commands (``seed_demo``, ``embedded_db``) as a Django app."""

    name = "devtools"
