from django.apps import AppConfig


class DocingestConfig(AppConfig):
    """Documentation ingestion as a Django app for its ``ingest_docs`` command."""

    name = "docingest"
