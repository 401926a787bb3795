from django.apps import AppConfig


class CachecoreConfig(AppConfig):
    name = "cachecore"

    def ready(self) -> None:
        # The services that run background jobs register their job kinds when imported
        # (cachecore.services.jobs.register); importing them here means every process that
        # loads Django (web, worker, shell) knows every kind before a job runs.
        from cachecore.services import erasure, exports, sections  # noqa: F401
