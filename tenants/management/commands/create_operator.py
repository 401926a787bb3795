"""Create (or update) a console operator with a role in a tenant."""

from __future__ import annotations

import secrets
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from tenants.models import Role, Tenant
from tenants.services import operator_create


class Command(BaseCommand):
    help = "create_operator --email E --tenant SLUG --role admin|support|compliance [--password-stdin] [--superuser]"

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--email", required=True)
        parser.add_argument("--tenant", help="tenant slug (not needed with --superuser)")
        parser.add_argument("--role", choices=Role.values)
        parser.add_argument("--password-stdin", action="store_true", help="read the password from stdin")
        parser.add_argument("--superuser", action="store_true", help="sees every tenant")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = None
        if options["tenant"]:
            tenant = Tenant.objects.filter(slug=options["tenant"]).first()
            if tenant is None:
                raise CommandError(f"no tenant {options['tenant']!r}")
            if not options["role"]:
                raise CommandError("--role is required with --tenant")
        elif not options["superuser"]:
            raise CommandError("--tenant and --role are required (or --superuser)")
        if options["password_stdin"]:
            password = sys.stdin.readline().rstrip("\n")
            if len(password) < 8:
                raise CommandError("password must have at least 8 characters")
            generated = False
        else:
            password = secrets.token_urlsafe(12)
            generated = True
        operator_create(email=options["email"], password=password, tenant=tenant, role=options["role"],
                        superuser=options["superuser"])
        self.stderr.write(f"operator {options['email']} ready")
        if generated:
            self.stdout.write(password)
