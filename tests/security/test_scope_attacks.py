"""The attacks of issue 21, tried from outside as a new user would: a key limited to ``public:``
(recall, record, feedback, sections:read, sections:write) next to a tenant-wide key. Each must
fail and leave nothing written; an upsert of an id taken outside its scopes answers as a new id
and writes the key's own section (docs/scopes.md, "Id namespaces"), and the console and the CLI
say what sections:write means for such a key."""

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


def _shared(tenant, *ids):
    """The tenant's sections of ``ids`` in the shared namespace, field by field, and every trail
    with its status and its citations (what a limited key's upsert must leave as it was)."""
    return (list(Section.objects.filter(tenant=tenant, namespace="", external_id__in=ids).order_by("external_id")
                 .values_list("external_id", "sha256", "text", "scopes", "updated_at")),
            list(Trail.objects.filter(tenant=tenant).order_by("id").values_list("id", "scope", "status")),
            list(Citation.objects.filter(tenant=tenant).order_by("trail_id", "position")
                 .values_list("trail_id", "section_id", "section_namespace", "recorded_hash")))


def test_rewrite_uncited_fails(make_caller):
    """A limited key's upsert of a section it cannot see (no scopes: tenant-wide keys only)
    leaves that section as it was: the key gets a section of its own instead, and deleting it
    removes only that one."""
    wide = make_caller()
    limited = make_caller(tenant=wide.tenant, scopes=["public:"], permissions=LIMITED)
    wide.upsert({"guide/open-page": OPEN_PAGE})
    before = _shared(wide.tenant, "guide/open-page")
    put = limited.put("/api/v1/sections", {"sections": [{"id": "guide/open-page", "text": "Rewritten by public."}]})
    assert put.status_code == 200 and put.json()["created"] == 1, put.content
    assert _shared(wide.tenant, "guide/open-page") == before
    assert wide.get("/api/v1/sections/guide%2Fopen-page").json()["text"] == OPEN_PAGE
    assert limited.delete("/api/v1/sections/guide%2Fopen-page").status_code == 204
    assert _shared(wide.tenant, "guide/open-page") == before
    assert limited.delete("/api/v1/sections/guide%2Fopen-page").status_code == 404
    assert list(Section.objects.filter(tenant=wide.tenant).values_list("external_id", "namespace", "text")) == [
        ("guide/open-page", "", OPEN_PAGE)]


def test_an_upsert_of_an_id_taken_outside_the_keys_scopes_answers_as_a_new_id(make_caller):
    """Issue 21's last bit (docs/scopes.md, "Id namespaces"): a limited key upserting an id that
    exists outside its scopes — invisible to it, or visible but shared with other scopes — gets
    exactly what a fresh id gets (status, body), and a section of its own: nothing of the
    existing one changes (text, hash, scopes, its trails); the key reads, cites and is served its
    own text, a tenant-wide key still the original; deleting it as the key removes only its own."""
    wide = make_caller()
    limited = make_caller(tenant=wide.tenant, scopes=["public:"], permissions=LIMITED)
    wide.upsert({"hr/salaries-2025": SALARIES}, scopes=["internal:hr"])
    wide.upsert({"guide/shared": OPEN_PAGE}, scopes=["public:", "internal:"])
    salaries_question = "What are the 2025 salary bands?"
    assert wide.record(query=salaries_question, cited=["hr/salaries-2025"], scope="internal:hr").status_code == 201
    assert wide.record(query="How do I sign in?", cited=["guide/shared"], scope="public:faq").status_code == 201
    before = _shared(wide.tenant, "hr/salaries-2025", "guide/shared")

    answers = {i: limited.put("/api/v1/sections", {"sections": [{"id": i, "text": "Mine: probe."}]})
               for i in ("fresh/id", "hr/salaries-2025", "guide/shared")}
    assert {r.status_code for r in answers.values()} == {200}
    assert {r.content for r in answers.values()} == {answers["fresh/id"].content}
    assert answers["fresh/id"].json() == {"created": 1, "updated": 0, "unchanged": 0, "invalidated_trails": 0}
    assert _shared(wide.tenant, "hr/salaries-2025", "guide/shared") == before  # text, hash, scopes, trails

    # The key reads back its own text, in the shape a fresh id's read has.
    fresh = limited.get("/api/v1/sections/fresh%2Fid").json()
    for quoted, section_id in (("hr%2Fsalaries-2025", "hr/salaries-2025"), ("guide%2Fshared", "guide/shared")):
        mine = limited.get(f"/api/v1/sections/{quoted}").json()
        assert {**mine, "updated_at": None} == {**fresh, "id": section_id, "updated_at": None}
    # A tenant-wide key still reads the original, and finds the key's own by its namespace.
    original = wide.get("/api/v1/sections/hr%2Fsalaries-2025").json()
    assert original["text"] == SALARIES and original["namespace"] == "" and original["scopes"] == ["internal:hr"]
    own = wide.get("/api/v1/sections/hr%2Fsalaries-2025?namespace=public:").json()
    assert own["text"] == "Mine: probe." and own["namespace"] == "public:" and own["scopes"] == ["public:"]
    # A limited key may not name a namespace, whatever exists (one answer for every id).
    probes = [limited.get(f"/api/v1/sections/{i}?namespace=") for i in ("hr%2Fsalaries-2025", "never%2Fupserted")]
    assert [p.status_code for p in probes] == [403, 403] and probes[0].json() == probes[1].json()

    # A trail the key records citing the id binds to its own section: a recall in the key's
    # scope serves the key's text, a recall elsewhere the original.
    mine_question = "What does my probe section say?"
    assert limited.record(query=mine_question, cited=["hr/salaries-2025"], scope="public:x").status_code == 201
    assert Citation.objects.get(trail__scope="public:x").section_namespace == "public:"
    served = limited.recall(mine_question, scope="public:x")
    assert served["outcome"] == "prefetch" and [s["text"] for s in served["sections"]] == ["Mine: probe."]
    elsewhere = wide.recall(salaries_question, scope="internal:hr")
    assert elsewhere["outcome"] == "prefetch" and [s["text"] for s in elsewhere["sections"]] == [SALARIES]
    shared_page = wide.recall("How do I sign in?", scope="public:faq")
    assert [s["text"] for s in shared_page["sections"]] == [OPEN_PAGE]
    trail = limited.get(f"/api/v1/trails/{Trail.objects.get(scope='public:x').pk}").json()
    assert trail["cited"] == [{"id": "hr/salaries-2025", "hash": own["hash"]}]  # no namespace shown to the key

    # Deleting it as the key removes only its own: the original and its trail stay as they were.
    assert limited.delete("/api/v1/sections/hr%2Fsalaries-2025").status_code == 204
    assert Section.objects.get(tenant=wide.tenant, external_id="hr/salaries-2025").text == SALARIES
    assert Trail.objects.get(scope="internal:hr").status == "active"
    assert Trail.objects.get(scope="public:x").status == "stale"  # its one cited section is gone
    assert limited.get("/api/v1/sections/hr%2Fsalaries-2025").json() == limited.get(
        "/api/v1/sections/never%2Fupserted").json()
    assert wide.get("/api/v1/sections/hr%2Fsalaries-2025").json()["text"] == SALARIES
    # Its trail (stale now) serves nothing, never the tenant's section of the same id.
    assert limited.recall(mine_question, scope="public:x")["sections"] == []


def test_every_read_cite_and_write_of_a_limited_key_means_the_same_section(make_caller):
    """The resolution is one: what a limited key's upsert wrote is what its read, its record and
    its next upsert mean; another limited key of other prefixes means its own, or the shared one."""
    wide = make_caller()
    limited = make_caller(tenant=wide.tenant, scopes=["public:"], permissions=LIMITED)
    same = make_caller(tenant=wide.tenant, scopes=["public:", "public:"], permissions=LIMITED)
    other = make_caller(tenant=wide.tenant, scopes=["public:", "docs/"], permissions=LIMITED)
    wide.upsert({"guide/shared": OPEN_PAGE}, scopes=["public:", "internal:"])
    assert limited.upsert({"guide/shared": "First."})["created"] == 1
    assert limited.upsert({"guide/shared": "Second."}) == {"created": 0, "updated": 1, "unchanged": 0,
                                                           "invalidated_trails": 0}
    assert same.get("/api/v1/sections/guide%2Fshared").json()["text"] == "Second."  # the same prefixes, one namespace
    assert other.get("/api/v1/sections/guide%2Fshared").json()["text"] == OPEN_PAGE  # visible to it: the shared one
    assert other.upsert({"guide/shared": "Other's."})["created"] == 1
    assert sorted(Section.objects.filter(tenant=wide.tenant).values_list("namespace", "text")) == [
        ("", OPEN_PAGE), ("docs/,public:", "Other's."), ("public:", "Second.")]
    # An id free in the shared namespace is created there, and then overwritten there.
    assert limited.upsert({"public/new": "New."})["created"] == 1
    assert limited.upsert({"public/new": "Newer."})["updated"] == 1
    assert Section.objects.get(tenant=wide.tenant, external_id="public/new").namespace == ""


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
    assert "an upsert of an id that exists outside them creates the key&#x27;s own section" in page
    created = client.post("/console/api-keys/?tenant=acme", {"name": "bot", "scope_prefixes": "public:",
                                                             "permissions_shown": "1",
                                                             "permissions": ["recall", "sections:write"]})
    assert created.status_code == 201
    assert "“bot”: sections:write on a key limited to scope prefixes" in created.content.decode()
    assert ApiKey.objects.get(tenant=tenant, name="bot").scope_prefixes == ["public:"]
