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

        from django.db.models.signals import post_delete, post_save

        from api.authentication import forget_saved_key, forget_saved_tenant
        from tenants.models import ApiKey, Tenant

        # A key saved (revoked, permissions or scopes changed) or deleted in this process is
        # forgotten by its authentication cache at once; other processes within its seconds.
        post_save.connect(forget_saved_key, sender=ApiKey, dispatch_uid="api.forget_saved_key")
        post_delete.connect(forget_saved_key, sender=ApiKey, dispatch_uid="api.forget_deleted_key")
        # Likewise a tenant saved here (its settings travel with its keys' callers).
        post_save.connect(forget_saved_tenant, sender=Tenant, dispatch_uid="api.forget_saved_tenant")
        post_delete.connect(forget_saved_tenant, sender=Tenant, dispatch_uid="api.forget_deleted_tenant")
