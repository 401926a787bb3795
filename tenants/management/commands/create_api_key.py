"""Create an API key for a tenant; the key alone is printed on the last line of stdout."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from tenants.caller import tenant_caller
from tenants.models import DEFAULT_KEY_PERMISSIONS, LIMITED_SECTIONS_WRITE_NOTE, KeyPermission, Tenant
from tenants.services import api_key_create, tenant_create


class Command(BaseCommand):
    help = ("Create an API key: --tenant SLUG [--create-tenant] [--scopes P1,P2] [--permissions recall,record] "
            "[--name NAME]")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", required=True, help="tenant slug")
        parser.add_argument("--create-tenant", action="store_true", help="create the tenant if missing")
        parser.add_argument("--scopes", default="",
                            help="comma-separated scope prefixes the key is limited to, each ending in ':' or '/'")
        parser.add_argument("--permissions", default="",
                            help=f"comma-separated permissions ({', '.join(KeyPermission.values)}); default "
                            f"(least privilege): {', '.join(DEFAULT_KEY_PERMISSIONS)}. "
                            + LIMITED_SECTIONS_WRITE_NOTE.replace("%", "%%"))
        parser.add_argument("--name", default="cli", help="a name for the key")

    def handle(self, *args: Any, **options: Any) -> None:
        slug = options["tenant"]
        tenant = Tenant.objects.filter(slug=slug).first()
        if tenant is None:
            if not options["create_tenant"]:
                raise CommandError(f"no tenant {slug!r} (pass --create-tenant to create it)")
            tenant = tenant_create(slug=slug)
            self.stderr.write(f"created tenant {slug}")
        scopes = [p.strip() for p in options["scopes"].split(",") if p.strip()]
        permissions = [p.strip() for p in options["permissions"].split(",") if p.strip()] or None
        try:
            key, raw = api_key_create(caller=tenant_caller(tenant, actor_label="cli:create_api_key"),
                                      name=options["name"], scope_prefixes=scopes, permissions=permissions)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        if permissions is None:
            self.stderr.write(f"no --permissions given: the key gets the least-privilege default "
                              f"({', '.join(key.permissions)}); pass --permissions for more")
        if key.scope_prefixes and KeyPermission.SECTIONS_WRITE in key.permissions:
            self.stderr.write(f"note: {LIMITED_SECTIONS_WRITE_NOTE}")
        self.stderr.write(f"API key {key.name} for tenant {slug} (scopes: {', '.join(scopes) or 'all'}; "
                          f"permissions: {', '.join(key.permissions)}):")
        self.stdout.write(raw)
