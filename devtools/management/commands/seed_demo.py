"""Demo tenant, operator and API key for `make run`; prints the login and the key. A development
convenience only: refused outside development mode. The demo login's password is random,
generated once per data folder and kept there (readable by its owner only), so every
`make run` prints the same one and no two checkouts share it."""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from devtools.demo import seed_demo_data
from tenants.caller import tenant_caller
from tenants.models import Role, Tenant, all_key_permissions
from tenants.services import api_key_create, operator_create, tenant_create

DEMO_EMAIL = "demo@trailcache.local"


def demo_password_file() -> Path:
    # One file per database, so a test database's demo login never touches the served one's.
    return Path(settings.TRAILCACHE_DATA_DIR) / f"demo-login-{settings.DATABASES['default']['NAME']}.txt"


def demo_password() -> tuple[str, bool]:
    """This data folder's demo password, and whether it was made now."""
    path = demo_password_file()
    if path.exists() and get_user_model().objects.filter(username=DEMO_EMAIL).exists():
        return path.read_text().strip(), False
    password = secrets.token_urlsafe(12)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(password + "\n")
    return password, True


class Command(BaseCommand):
    help = "Create the demo tenant (with sample sections, trails and recalls), an operator and an API key."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--port", default="8000")
        parser.add_argument("--no-data", action="store_true", help="skip sample sections, trails and recalls")

    def handle(self, *args: Any, **options: Any) -> None:
        if not settings.TRAILCACHE_DEV:
            raise CommandError("seed_demo is a development convenience (make run): it needs TRAILCACHE_DEV=true")
        tenant = Tenant.objects.filter(slug="demo").first() or tenant_create(slug="demo", name="Demo Docs Inc.")
        password, new = demo_password()
        if new:
            operator_create(email=DEMO_EMAIL, password=password, tenant=tenant, role=Role.ADMIN, superuser=True)
        # The local demo's key may do everything (a development convenience, TRAILCACHE_DEV only).
        _, raw = api_key_create(caller=tenant_caller(tenant, actor_label="cli:seed_demo"), name="demo (make run)",
                                permissions=all_key_permissions())
        if not options["no_data"]:
            seeded = seed_demo_data(tenant=tenant)
            if seeded:
                self.stdout.write(f"Seeded demo data: {seeded}")
        url = f"http://127.0.0.1:{options['port']}"
        self.stdout.write(
            "\n".join([
                "",
                "Trailcache is starting.",
                f"  Console:  {url}/console/   login {DEMO_EMAIL} / {password}",
                f"  API:      {url}/api/v1/    docs {url}/api/v1/docs/",
                f"  API key (tenant 'demo'):  {raw}",
                "",
            ])
        )
