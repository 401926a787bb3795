"""Recall is a handful of SQL statements, however many trails match or sections they cite."""

from cachecore import services


def _seed(tenant, trails, sections_per_trail):
    sections = [{"id": f"doc#{i}", "text": f"Section {i} explains how to install Acme, step {i}."}
                for i in range(trails * sections_per_trail)]
    services.sections_upsert(tenant=tenant, sections=sections)
    for t in range(trails):
        cited = [f"doc#{t * sections_per_trail + j}" for j in range(sections_per_trail)]
        services.trail_record(tenant=tenant, scope="default", query=f"How do I install Acme, variant {t}?",
                              steps=[], cited=cited, signal={"source": "caller", "accepted": True})


def test_recall_query_count_does_not_grow_with_trails_or_citations(make_tenant, django_assert_max_num_queries):
    small, large = make_tenant(), make_tenant()
    _seed(small, trails=1, sections_per_trail=1)
    _seed(large, trails=5, sections_per_trail=8)
    for tenant in (small, large):
        services.recall(tenant=tenant, scope="default", query="warm the scope-size cache")
        with django_assert_max_num_queries(8):
            result = services.recall(tenant=tenant, scope="default", query="How do I install Acme, variant 0?")
        assert result.outcome == "prefetch"
    assert len(result.trails) == 5 and len(result.sections) == 40
