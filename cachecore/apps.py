from django.apps import AppConfig


class CachecoreConfig(AppConfig):
    name = "cachecore"
