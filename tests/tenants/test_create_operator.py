"""``manage.py create_operator``: an operator with a role in a tenant, a generated password
printed once (or one read from stdin), and refusals that say what is wrong."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import authenticate
from django.core.management import CommandError, call_command
from django.test import Client

from tenants.models import Membership, Role
from tenants.services import tenant_create

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def acme():
    return tenant_create(slug="acme", name="Acme")


def _run(*args: str, stdin: str | None = None, monkeypatch=None) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    if stdin is not None:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    call_command("create_operator", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_creates_an_operator_with_a_generated_password_printed_once(acme):
    out, err = _run("--email", "ops@acme.test", "--tenant", "acme", "--role", "admin")
    password = out.strip()
    assert len(password) >= 12 and password not in err and "ops@acme.test" in err
    user = authenticate(username="ops@acme.test", password=password)
    assert user is not None and not user.is_superuser
    assert list(Membership.objects.filter(user=user).values_list("tenant__slug", "role")) == [("acme", Role.ADMIN)]

    console = Client()
    assert console.login(username="ops@acme.test", password=password)
    assert console.get("/console/settings/?tenant=acme").status_code == 200  # the admin role works


def test_reads_the_password_from_stdin_and_prints_nothing_then(acme, monkeypatch):
    out, _ = _run("--email", "c@acme.test", "--tenant", "acme", "--role", "compliance", "--password-stdin",
                  stdin="a-long-secret-pass\n", monkeypatch=monkeypatch)
    assert out == ""
    assert authenticate(username="c@acme.test", password="a-long-secret-pass") is not None


def test_a_superuser_needs_no_tenant(db):
    out, _ = _run("--email", "root@x.test", "--superuser")
    assert authenticate(username="root@x.test", password=out.strip()).is_superuser


@pytest.mark.parametrize(("args", "stdin", "message"), [
    (["--email", "a@x.test", "--tenant", "nope", "--role", "admin"], None, "no tenant 'nope'"),
    (["--email", "a@x.test", "--tenant", "acme"], None, "--role is required with --tenant"),
    (["--email", "a@x.test"], None, "--tenant and --role are required (or --superuser)"),
    (["--email", "a@x.test", "--tenant", "acme", "--role", "admin", "--password-stdin"], "short\n",
     "password must have at least 8 characters"),
])
def test_refusals_say_what_is_wrong_and_create_nothing(acme, monkeypatch, django_user_model, args, stdin, message):
    with pytest.raises(CommandError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _run(*args, stdin=stdin, monkeypatch=monkeypatch)
    assert not django_user_model.objects.filter(username="a@x.test").exists()


def test_an_unknown_role_is_refused(acme):
    with pytest.raises(CommandError, match="invalid choice"):
        _run("--email", "a@x.test", "--tenant", "acme", "--role", "owner")
