"""The attacks of issue 21, tried from outside as a new user would: a key limited to ``public:``
(recall, record, feedback, sections:read, sections:write) next to a tenant-wide key. Each must
fail and leave nothing written; the one bit an upsert still tells such a key (docs/scopes.md, "A
decision") is pinned to that bit, and the console and the CLI say so."""

from __future__ import annotations

from cachecore.models import Citation, Section, Trail

SALARIES = "Salaries 2025: the HR band table for every grade."
OPEN_PAGE = "The open guide page: how to sign in."
LIMITED = ["recall", "record", "feedback", "sections:read", "sections:write"]


def _rows(tenant):
    return (list(Section.objects.filter(tenant=tenant).order_by("external_id").values_list("external_id", "sha256",
                                                                                          "text")),
            Trail.objects.filter(tenant=tenant).count(), Citation.objects.filter(tenant=tenant).count())


def test_cite_then_read_fails(make_caller):
    wide = make_caller()
    limited = make_caller(tenant=wide.tenant, scopes=["public:"], permissions=LIMITED)
    wide.upsert({"hr/salaries-2025": SALARIES})
    assert wide.record(query="What are the 2025 salary bands?", cited=["hr/salaries-2025"],
                       scope="internal:hr").status_code == 201
    before = _rows(wide.tenant)
    cited = limited.record(query="Tell me the salaries", cited=["hr/salaries-2025"], scope="public:x")
    never = limited.record(query="Tell me the salaries", cited=["never/upserted"], scope="public:x")
    assert cited.status_code == never.status_code == 422, cited.content
    # The same answer, word for word, but for the id.
    assert cited.content.decode() == never.content.decode().replace("never/upserted", "hr/salaries-2025")
    read = limited.get("/api/v1/sections/hr%2Fsalaries-2025")
    assert read.status_code == 404 and read.json() == limited.get("/api/v1/sections/never%2Fupserted").json()
    assert SALARIES not in read.content.decode()
    assert _rows(wide.tenant) == before


def test_rewrite_uncited_fails(make_caller):
    wide = make_caller()
    limited = make_caller(tenant=wide.tenant, scopes=["public:"], permissions=LIMITED)
    wide.upsert({"guide/open-page": OPEN_PAGE})
    before = _rows(wide.tenant)
    put = limited.put("/api/v1/sections", {"sections": [{"id": "guide/open-page", "text": "Rewritten by public."}]})
    assert put.status_code == 403, put.content
    assert put.json()["error"] == "scope_forbidden"
    assert _rows(wide.tenant) == before
    assert limited.delete("/api/v1/sections/guide%2Fopen-page").status_code == 404
    assert _rows(wide.tenant) == before


def test_an_upsert_tells_a_limited_writer_that_an_id_exists_and_nothing_more(make_caller):
    """The decision of docs/scopes.md: an id existing outside the key's scopes is refused (403),
    where a new one is created — one bit, the same answer whether the section is invisible to the
    key or visible but shared with other scopes, and never its text, hash or scopes."""
    wide = make_caller()
    limited = make_caller(tenant=wide.tenant, scopes=["public:"], permissions=LIMITED)
    wide.upsert({"hr/salaries-2025": SALARIES}, scopes=["internal:hr"])
    wide.upsert({"guide/shared": OPEN_PAGE}, scopes=["public:", "internal:"])
    before = _rows(wide.tenant)
    hidden = limited.put("/api/v1/sections", {"sections": [{"id": "hr/salaries-2025", "text": "Probe."}]})
    shared = limited.put("/api/v1/sections", {"sections": [{"id": "guide/shared", "text": "Probe."}]})
    assert hidden.status_code == shared.status_code == 403
    assert hidden.json()["error"] == "scope_forbidden"
    assert hidden.content.decode() == shared.content.decode().replace("guide/shared", "hr/salaries-2025")
    for leaked in (SALARIES, "internal:hr", Section.objects.get(external_id="hr/salaries-2025").sha256):
        assert leaked not in hidden.content.decode()
    assert _rows(wide.tenant) == before
    # Still invisible everywhere else: read, delete and cite answer as for an id never upserted.
    assert limited.get("/api/v1/sections/hr%2Fsalaries-2025").json() == limited.get(
        "/api/v1/sections/never%2Fupserted").json()
    created = limited.put("/api/v1/sections", {"sections": [{"id": "never/upserted", "text": "Mine."}]})
    assert created.json()["created"] == 1
    assert Section.objects.get(tenant=wide.tenant, external_id="never/upserted").scopes == ["public:"]


def test_the_console_and_the_cli_say_what_sections_write_tells_a_limited_key(make_tenant, settings):
    import io

    from django.core.management import call_command
    from django.test import Client

    from tenants.models import LIMITED_SECTIONS_WRITE_NOTE, ApiKey, Role
    from tenants.services import operator_create

    tenant = make_tenant("acme")
    out, err = io.StringIO(), io.StringIO()
    call_command("create_api_key", "--tenant", "acme", "--scopes", "public:", "--permissions",
                 "recall,sections:write", "--name", "writer", stdout=out, stderr=err)
    assert LIMITED_SECTIONS_WRITE_NOTE in err.getvalue()
    quiet = io.StringIO()
    call_command("create_api_key", "--tenant", "acme", "--permissions", "sections:write", "--name", "wide",
                 stdout=io.StringIO(), stderr=quiet)
    assert LIMITED_SECTIONS_WRITE_NOTE not in quiet.getvalue()  # a tenant-wide writer sees every id anyway
    from tenants.management.commands.create_api_key import Command

    assert LIMITED_SECTIONS_WRITE_NOTE in " ".join(Command().create_parser("manage.py", "create_api_key")
                                                   .format_help().split())
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    client = Client()
    client.force_login(operator_create(email="admin@acme.test", password="pw-123456789", tenant=tenant,
                                       role=Role.ADMIN))
    page = client.get("/console/api-keys/?tenant=acme").content.decode()
    assert "lets it learn whether a section id exists outside its scopes" in page
    created = client.post("/console/api-keys/?tenant=acme", {"name": "bot", "scope_prefixes": "public:",
                                                             "permissions_shown": "1",
                                                             "permissions": ["recall", "sections:write"]})
    assert created.status_code == 201
    assert "“bot”: sections:write on a key limited to scope prefixes" in created.content.decode()
    assert ApiKey.objects.get(tenant=tenant, name="bot").scope_prefixes == ["public:"]
