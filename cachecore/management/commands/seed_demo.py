"""Demo tenant, operator and API key for `make run`; prints the login and the key."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from cachecore.demo import seed_demo_data
from tenants.models import Role, Tenant
from tenants.services import api_key_create, operator_create, tenant_create

DEMO_EMAIL = "demo@trailcache.local"
DEMO_PASSWORD = "trailcache-demo"


class Command(BaseCommand):
    help = "Create the demo tenant (with sample sections, trails and recalls), an operator and an API key."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--port", default="8000")
        parser.add_argument("--no-data", action="store_true", help="skip sample sections, trails and recalls")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = Tenant.objects.filter(slug="demo").first() or tenant_create(slug="demo", name="Demo Docs Inc.")
        operator_create(email=DEMO_EMAIL, password=DEMO_PASSWORD, tenant=tenant, role=Role.ADMIN, superuser=True)
        _, raw = api_key_create(tenant=tenant, name="demo (make run)", actor_label="cli:seed_demo")
        if not options["no_data"]:
            seeded = seed_demo_data(tenant=tenant)
            if seeded:
                self.stdout.write(f"Seeded demo data: {seeded}")
        url = f"http://127.0.0.1:{options['port']}"
        self.stdout.write(
            "\n".join([
                "",
                "Trailcache is starting.",
                f"  Console:  {url}/console/   login {DEMO_EMAIL} / {DEMO_PASSWORD}",
                f"  API:      {url}/api/v1/    docs {url}/api/v1/docs/",
                f"  API key (tenant 'demo'):  {raw}",
                "",
            ])
        )
