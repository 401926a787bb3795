"""Real headless Chromium (Debian's /usr/bin/chromium, never a downloaded browser) driving
the console on pytest-django's live_server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--no-first-run", "--disable-sync"]
PASSWORD = "browser-test-pass"


@pytest.fixture(scope="module", autouse=True)
def allow_orm_beside_playwright() -> Iterator[None]:
    """Playwright's sync API runs an event loop in this thread, so Django takes the fixtures'
    ORM calls for calls from async code. Allowed here only, while the browser tests run (the
    browser fixture below lives as long), never for the rest of the suite."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        yield


@pytest.fixture(scope="module")
def browser(allow_orm_beside_playwright: None) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()


@pytest.fixture(autouse=True)
def fast_password_hashing(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def console_tenant(transactional_db: None) -> Any:
    from cachecore import services
    from tenants.models import Role
    from tenants.services import operator_create, tenant_create

    tenant = tenant_create(slug="acme", name="Acme Docs")
    services.sections_upsert(tenant=tenant, sections=[
        {"id": "manual/install.md#linux", "text": "Install with apt install acme-sync on Debian and Ubuntu."},
        {"id": "manual/account.md#password", "text": "To reset your password, choose Forgot password."},
        {"id": "manual/sync.md#conflicts", "text": "When a file changes on two devices, both copies are kept."},
    ])
    for query, cited in [
        ("How do I install Acme Sync on Ubuntu?", "manual/install.md#linux"),
        ("How do I reset my password?", "manual/account.md#password"),
        ("What happens on a sync conflict?", "manual/sync.md#conflicts"),
    ]:
        services.trail_record(tenant=tenant, scope="default", query=query, cited=[cited],
                              steps=[{"tool": "search", "args": {"q": query}, "returned": [cited]}],
                              signal={"source": "caller", "accepted": True})
    for role in (Role.SUPPORT, Role.ADMIN):
        operator_create(email=f"{role}@acme.test", password=PASSWORD, tenant=tenant, role=role)
    return tenant


def login(page: Any, live_server: Any, email: str, next_path: str = "/console/") -> None:
    page.goto(f"{live_server.url}/console/login/?next={next_path}")
    page.fill("#id_username", email)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_load_state("networkidle")
