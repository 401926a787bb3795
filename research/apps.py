from django.apps import AppConfig


class ResearchConfig(AppConfig):
    """The research commands (``bench``, ``bench_export``, ``evaluate``) as a Django app: it
    may import the product; the product never imports it (tests/test_import_boundaries.py)."""

    name = "research"
