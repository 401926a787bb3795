"""The attacks of issue 21, tried from outside as a new user would: a key limited to ``public:``
(recall, record, feedback, sections:read, sections:write) next to a tenant-wide key. Each must
fail and leave nothing written."""

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
