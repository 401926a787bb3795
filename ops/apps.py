from django.apps import AppConfig


class OpsConfig(AppConfig):
    name = "ops"

    def ready(self) -> None:
        # Connected here, not when the URLconf loads: a Celery worker (which never loads it)
        # counts the invalidations and records its jobs make, like a web worker.
        from ops import metrics

        metrics.connect_receivers()
