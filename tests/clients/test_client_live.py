"""The Python client against the live service: the agent loop, every endpoint's response parsed
into the client's models, one exception class per error status, fail-open recall, batches, and
the models compared with the live OpenAPI schema."""

from __future__ import annotations

import asyncio
import logging
import socket
import typing

import httpx
import pytest
import trailcache
from pydantic import BaseModel
from trailcache import models as m

from tests.clients.corpus import SECTIONS

QUESTION = "How do I install Acme Sync on Ubuntu?"


def test_the_agent_loop_recall_record_feedback(tc):
    assert tc.upsert_sections(SECTIONS) == m.SectionsUpsertResult(created=4, updated=0, unchanged=0,
                                                                  invalidated_trails=0)
    first = tc.recall(QUESTION)
    assert (first.outcome, first.reason, first.failed_open) == ("miss", "no_candidate", False)
    recorded = tc.record(QUESTION, ["guide/install.md#linux"], recall_id=first,
                         steps=[{"tool": "search", "args": {"q": "install ubuntu"},
                                 "returned": ["guide/install.md#linux", "guide/install.md#windows"]}])
    assert recorded.status == "active"
    again = tc.recall(QUESTION)
    assert again.served and again.reason == "match" and again.trail_id == recorded.trail_id
    assert [s.id for s in again.served_sections] == ["guide/install.md#linux"]
    assert again.served_sections[0].text == SECTIONS["guide/install.md#linux"]
    assert tc.feedback(again, accepted=True) == m.FeedbackResult(recall_id=again.recall_id, accepted=True)
    stats = tc.stats()
    assert (stats.recalls, stats.prefetch, stats.miss) == (2, 1, 1)
    assert stats.feedback["positive"] == 1


def test_every_endpoint_answers_into_the_models(tc):
    tc.upsert_sections(SECTIONS)
    section = tc.get_section("guide/install.md#linux")
    assert isinstance(section, m.SectionOut) and section.text == SECTIONS["guide/install.md#linux"]
    assert len(section.hash) == 64
    pending = tc.record("Something else entirely", ["faq:conflicts"], accepted=None, subject="user-7")
    assert pending.status == "pending"
    trail = tc.get_trail(pending.trail_id)
    assert isinstance(trail, m.TrailOut) and [c.id for c in trail.cited] == ["faq:conflicts"]
    assert isinstance(tc.stats(scope="default"), m.Stats)
    export = tc.create_export("jsonl", scope="default")
    assert export.status in ("queued", "running", "done")
    status = tc.get_export(export.export_id)
    assert isinstance(status, m.ExportStatus) and status.progress.done >= 0
    if status.status != "done":
        with pytest.raises(trailcache.ConflictError) as conflict:
            tc.download_export(export.export_id)
        assert conflict.value.status_code == 409
    assert tc.erase_subject("user-7") == m.SubjectEraseResult(deleted=1)
    tc.delete_section("faq:conflicts")
    with pytest.raises(trailcache.NotFoundError):
        tc.get_section("faq:conflicts")
    kept = tc.record(QUESTION, ["guide/install.md#linux"])
    tc.delete_trail(kept.trail_id)
    with pytest.raises(trailcache.NotFoundError):
        tc.get_trail(kept.trail_id)


def test_the_async_client_runs_the_same_loop(service):
    async def loop() -> tuple[m.RecallResult, m.RecallResult, m.FeedbackResult]:
        async with service.async_client(fail_open=False) as tc:
            await tc.upsert_sections(list(SECTIONS.items()))
            first = await tc.recall("How do I reset my password?")
            await tc.record("How do I reset my password?", ["guide/account.md#reset-password"], recall_id=first)
            again = await tc.recall("How do I reset my password?")
            return first, again, await tc.feedback(again.recall_id, accepted=False)

    first, again, feedback = asyncio.run(loop())
    assert first.outcome == "miss" and again.outcome == "prefetch" and feedback.accepted is False
    with service.client() as tc:
        assert tc.get_trail(again.trail_id).status == "quarantined"


def test_each_error_status_has_its_class_and_carries_the_error_shape(service, make_service):
    with service.client(fail_open=False) as tc:
        with pytest.raises(trailcache.BadRequestError) as bad:
            tc.recall("   ")
        assert bad.value.status_code == 400 and bad.value.error == "invalid" and "query" in bad.value.fields
        with pytest.raises(trailcache.UnknownSectionsError) as unknown:
            tc.record(QUESTION, ["never/upserted"])
        assert unknown.value.status_code == 422 and unknown.value.unknown_ids == ["never/upserted"]
        with pytest.raises(trailcache.NotFoundError) as missing:
            tc.get_trail("00000000-0000-0000-0000-000000000000")
        assert missing.value.error == "not_found"
    limited = make_service(scopes=["team-a:"], tenant=service.tenant)
    with limited.client(fail_open=False) as tc:
        with pytest.raises(trailcache.PermissionDeniedError) as denied:
            tc.recall(QUESTION, scope="team-b")
        assert denied.value.status_code == 403 and "scope" in denied.value.fields
    with trailcache.Trailcache(service.url, "tc_nope_nope", fail_open=False) as tc:
        with pytest.raises(trailcache.AuthenticationError) as unauthenticated:
            tc.stats()
        assert unauthenticated.value.status_code == 401
        assert unauthenticated.value.headers.get("www-authenticate") == "Bearer"


def test_a_body_over_one_mebibyte_is_a_413(service):
    """The client keeps its own batches under the limit; a hand-made oversized body is refused."""
    with service.client(fail_open=False) as tc:
        with pytest.raises(trailcache.PayloadTooLargeError) as too_large:
            tc._send(tc._upsert_call([m.SectionIn(id=f"s{i}", text="y" * 150_000) for i in range(8)]))
        assert too_large.value.status_code == 413


def test_upserts_go_in_batches_under_the_service_limits(tc):
    sections = {f"bulk/{i}": f"Bulk section number {i} about topic {i % 7}." for i in range(1203)}
    result = tc.upsert_sections(sections, batch_size=500)
    assert (result.created, result.updated, result.unchanged) == (1203, 0, 0)
    again = tc.upsert_sections(sections | {"bulk/0": "Rewritten."})
    assert (again.created, again.updated, again.unchanged) == (0, 1, 1202)
    wide = {f"wide/{i}": "z" * 100_000 for i in range(12)}  # 1.2 MB of text: split by size, not by count
    assert tc.upsert_sections(wide).created == 12


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_recall_fails_open_with_one_warning_per_outage(service, caplog):
    sleeps: list[float] = []
    down = trailcache.Trailcache(f"http://127.0.0.1:{_closed_port()}", service.api_key, sleep=sleeps.append,
                                 retry=trailcache.RetryPolicy(max_retries=2))
    with caplog.at_level(logging.DEBUG, logger="trailcache"):
        first = down.recall(QUESTION)
        second = down.recall(QUESTION)
    assert first.outcome == second.outcome == "miss"
    assert first.failed_open and first.recall_id == "" and "TransportError" in first.error
    assert len(sleeps) == 4  # two retries per call, then the miss
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "recall failed" in warnings[0].getMessage()
    # A record after a failed-open recall simply carries no link.
    assert down._record_call(QUESTION, ["a"], scope=None, steps=None, accepted=True, source="caller", subject=None,
                             answer=None, recall_id=first).json.get("recall_id") is None
    with pytest.raises(trailcache.TransportError):
        down.recall(QUESTION, fail_open=False)
    # A wrong key is an error too: still a miss, never an exception in the agent.
    with trailcache.Trailcache(service.url, "tc_nope_nope") as bad_key:
        assert bad_key.recall(QUESTION).failed_open


def test_the_async_client_fails_open_too(service):
    async def sleep(_: float) -> None:
        return None

    async def go() -> m.RecallResult:
        async with trailcache.AsyncTrailcache(f"http://127.0.0.1:{_closed_port()}", "tc_x", sleep=sleep) as tc:
            return await tc.recall(QUESTION)

    assert asyncio.run(go()).failed_open


def _model_fields(model: type[BaseModel]) -> tuple[set[str], set[str]]:
    client_only = getattr(model, "client_fields", frozenset())
    fields = {name for name in model.model_fields if name not in client_only}
    required = {name for name, f in model.model_fields.items() if f.is_required()}
    return fields, required


def _enum(schema: dict, component: dict, prop: str) -> set[str] | None:
    spec = component["properties"][prop]
    refs = [spec] + spec.get("allOf", []) + spec.get("oneOf", [])
    for ref in refs:
        if "$ref" in ref:
            target = schema["components"]["schemas"][ref["$ref"].rsplit("/", 1)[-1]]
            if target.get("enum") and target["enum"] != [""]:
                return set(target["enum"])
    return None


def test_the_models_match_the_live_openapi_schema(service):
    schema = httpx.get(f"{service.url}/api/v1/schema/?format=json").raise_for_status().json()
    components = schema["components"]["schemas"]
    request_models = {"SectionIn", "SectionsUpsert", "Step", "Signal", "TrailRecord", "Recall", "Feedback",
                      "ExportRequest"}
    for name, model in m.SCHEMA_MODELS.items():
        assert name in components, f"{name} is no longer in the schema"
        component = components[name]
        fields, required = _model_fields(model)
        assert fields == set(component["properties"]), name
        # Requests: the client may fill defaults, never leave out what the service requires.
        # Responses: the model never demands a field the service may leave out.
        schema_required = set(component.get("required", []))
        assert required <= schema_required, name
        if name in request_models:
            assert schema_required <= fields, name
    # Every response model is what some operation answers, and the enums agree.
    answered = {
        content["schema"]["$ref"].rsplit("/", 1)[-1]
        for path in schema["paths"].values() for op in path.values()
        for code, resp in op.get("responses", {}).items()
        for content in resp.get("content", {}).values() if "$ref" in content.get("schema", {})
    }
    assert answered <= set(m.SCHEMA_MODELS), answered - set(m.SCHEMA_MODELS)
    assert _enum(schema, components["RecallResult"], "outcome") == set(typing.get_args(m.Outcome))
    assert _enum(schema, components["RecallResult"], "reason") == set(typing.get_args(m.Reason))
    assert _enum(schema, components["TrailRecordResult"], "status") == set(typing.get_args(m.TrailStatus))
    assert _enum(schema, components["RecallSection"], "status") == set(typing.get_args(m.SectionStatus))
    assert _enum(schema, components["ExportStatus"], "status") == set(typing.get_args(m.JobStatus))
