"""When an upsert's follow-up work runs is the caller's explicit choice (``invalidation=``,
``chunks=``), never a patched setting: the size rule by default, in the call, as a job, or later."""

from __future__ import annotations

import pytest

from cachecore.models import Job, JobKind, Section, Trail, TrailStatus
from cachecore.services.sections import section_chunks_compute, sections_upsert
from tenants.caller import tenant_caller
from tests.background.factories import make_trail

TEXT = "Set the timeout in the configuration file. The default is thirty seconds."


@pytest.mark.django_db
def test_chunks_now_embeds_in_the_call_whatever_the_size(make_tenant, settings):
    settings.TRAILCACHE_SYNC_CHUNK_LIMIT = 0
    tenant = make_tenant()
    sections_upsert(caller=tenant_caller(tenant), sections=[{"id": "a", "text": TEXT}], chunks="now")
    assert Section.objects.get(tenant=tenant).chunks_ready
    assert not Job.objects.exists()


@pytest.mark.django_db
def test_chunks_later_leaves_them_to_the_caller(make_tenant):
    tenant = make_tenant()
    sections_upsert(caller=tenant_caller(tenant), sections=[{"id": "a", "text": TEXT}], chunks="later")
    section = Section.objects.get(tenant=tenant)
    assert not section.chunks_ready and not Job.objects.exists()
    section_chunks_compute(section_pks=[section.pk])
    assert Section.objects.get(pk=section.pk).chunks_ready


@pytest.mark.django_db
def test_chunks_job_writes_a_job_even_for_one_section(make_tenant):
    tenant = make_tenant()
    sections_upsert(caller=tenant_caller(tenant), sections=[{"id": "a", "text": TEXT}], chunks="job")
    assert Job.objects.filter(tenant=tenant, kind=JobKind.SECTION_CHUNKS).count() == 1


@pytest.mark.django_db
def test_invalidation_job_and_now_override_the_size_rule(make_tenant, settings):
    tenant = make_tenant()
    sections_upsert(caller=tenant_caller(tenant), sections=[{"id": "a", "text": TEXT}])
    trail = make_trail(tenant, query="timeout?", cited=["a"])
    result = sections_upsert(caller=tenant_caller(tenant), sections=[{"id": "a", "text": TEXT + " Changed."}],
                                      invalidation="job")
    assert result.invalidated_trails == 1
    assert Job.objects.filter(tenant=tenant, kind=JobKind.TRAILS_INVALIDATE).count() == 1
    assert Trail.objects.get(pk=trail.pk).status == TrailStatus.ACTIVE  # the job marks it
    settings.TRAILCACHE_SYNC_INVALIDATION_MAX_SECTIONS = 0
    sections_upsert(caller=tenant_caller(tenant), sections=[{"id": "a", "text": TEXT + " Again."}], invalidation="now")
    assert Trail.objects.get(pk=trail.pk).status == TrailStatus.STALE


def test_an_unknown_mode_is_refused():
    with pytest.raises(ValueError):
        sections_upsert(caller=tenant_caller(None), sections=[], chunks="sometimes")  # type: ignore[arg-type]
