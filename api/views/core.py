"""REST API v1: thin views over cachecore services and selectors."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from django.db import IntegrityError
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api import serializers as s
from api.permissions import HasKeyPermission
from cachecore.models import Trail
from cachecore.selectors.citations import trail_cited_as_seen
from cachecore.selectors.sections import section_get
from cachecore.selectors.stats import stats_for_tenant
from cachecore.selectors.trails import trail_get
from cachecore.services import calibration
from cachecore.services.erasure import subject_erase
from cachecore.services.feedback import feedback_apply
from cachecore.services.recall import recall
from cachecore.services.sections import section_delete, sections_upsert
from cachecore.services.trails import trail_delete, trail_record
from cachecore.signals import recall_answered
from tenants.caller import Caller
from tenants.models import ApiKey, KeyPermission, Tenant


def _validated(serializer_class: type, request: Request) -> dict[str, Any]:
    serializer = serializer_class(data=request.data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


class TenantAPIView(APIView):
    """Every view acts for the key's ``Caller`` (``request.user``) and hands it to the services
    and selectors, which apply its tenant, scope prefixes and permissions themselves (issue 21:
    one restriction point below every interface). ``key_permission`` (one, or one per method;
    api.permissions) answers 403 before the body is read."""

    permission_classes = [IsAuthenticated, HasKeyPermission]
    key_permission: str | dict[str, str] | None = None

    @property
    def caller(self) -> Caller:
        return self.request.user

    @property
    def tenant(self) -> Tenant:
        return self.caller.tenant

    @property
    def key(self) -> ApiKey:
        return self.request.auth


class SectionsView(TenantAPIView):
    key_permission = KeyPermission.SECTIONS_WRITE

    @extend_schema(request=s.SectionsUpsertSerializer, responses=s.SectionsUpsertResultSerializer,
                   summary="Upsert sections (server hashes the text)",
                   description="Each section may carry `scopes` (the scope prefixes that may see it). A key "
                   "without scope limits writes the tenant's shared id namespace. A key limited to scope "
                   "prefixes overwrites its own section of that id, or the shared one when it lies entirely "
                   "within its prefixes; otherwise it creates one (in its own namespace when the id exists "
                   "outside its prefixes), and every creation answers alike (docs/scopes.md, \"Id namespaces\").")
    def put(self, request: Request) -> Response:
        data = _validated(s.SectionsUpsertSerializer, request)
        try:
            result = sections_upsert(caller=self.caller, sections=data["sections"])
        except IntegrityError:
            # Two upserts creating the same new id at once: the loser's insert hits the unique key
            # (its transaction rolled back whole). Once more, it finds the row and updates it.
            result = sections_upsert(caller=self.caller, sections=data["sections"])
        return Response(asdict(result))


_NAMESPACE_PARAMETER = OpenApiParameter(
    "namespace", {"type": "string", "maxLength": s.MAX_NAMESPACE_CHARS, "pattern": s.NAMESPACE_PATTERN},
    description="The id namespace to address, for a key without scope limits (absent: the shared one, \"\"); "
    "a limited key's own sections are in its prefixes' namespace (docs/scopes.md, \"Id namespaces\"). A key "
    "limited to scope prefixes may not name one (403).")


class SectionDetailView(TenantAPIView):
    key_permission = {"GET": KeyPermission.SECTIONS_READ, "HEAD": KeyPermission.SECTIONS_READ,
                      "DELETE": KeyPermission.SECTIONS_WRITE}

    def _namespace(self, request: Request) -> str | None:
        query = s.SectionQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        return query.validated_data.get("namespace")

    @extend_schema(responses=s.SectionOutSerializer, summary="A section: id, hash, text, updated_at",
                   parameters=[_NAMESPACE_PARAMETER])
    def get(self, request: Request, section_id: str) -> Response:
        section = section_get(caller=self.caller, section_id=section_id, namespace=self._namespace(request))
        return Response(s.SectionOutSerializer(section, context={"show_scopes": not self.caller.scope_limited}).data)

    @extend_schema(responses={204: None}, summary="Delete a section; trails citing it see it as changed",
                   parameters=[_NAMESPACE_PARAMETER])
    def delete(self, request: Request, section_id: str) -> Response:
        section_delete(caller=self.caller, section_id=section_id, namespace=self._namespace(request))
        return Response(status=status.HTTP_204_NO_CONTENT)


class TrailsView(TenantAPIView):
    key_permission = KeyPermission.RECORD

    @extend_schema(request=s.TrailRecordSerializer, responses={201: s.TrailRecordResultSerializer},
                   summary="Record a trail after an accepted answer")
    def post(self, request: Request) -> Response:
        # A plainly valid body skips DRF's per-field work; anything else gets the serializer's errors.
        data = s.record_input(request.data) or _validated(s.TrailRecordSerializer, request)
        trail = trail_record(
            caller=self.caller, scope=data["scope"], query=data["query"], steps=data["steps"],
            cited=data["cited"], signal=data.get("signal"), subject=data.get("subject", ""),
            answer=data.get("answer"), recall_id=str(data["recall_id"]) if data.get("recall_id") else None,
        )
        return Response({"trail_id": str(trail.pk), "status": trail.status}, status=status.HTTP_201_CREATED)


def trail_as_stored(trail: Trail, *, cited: list[dict[str, str | None]] | None = None) -> dict[str, Any]:
    """The trail as the API shows it; ``cited`` as the caller may see it (``trail_cited_as_seen``),
    else as recorded."""
    return {
        "trail_id": str(trail.pk),
        "scope": trail.scope,
        "query": trail.query,
        "steps": trail.steps,
        "cited": cited if cited is not None else [
            {"id": c.section_id, "hash": c.recorded_hash, **({"namespace": c.section_namespace}
                                                             if c.section_namespace else {})}
            for c in trail.citations.all()],
        "status": trail.status,
        "signal": {"source": trail.signal_source or None, "accepted": trail.signal_accepted},
        "subject": trail.subject,
        "verdict": trail.verdict,
        "hits": trail.hits,
        "created_at": trail.created_at,
        "expires_at": trail.expires_at,
        "last_hit_at": trail.last_hit_at,
    }


class TrailDetailView(TenantAPIView):
    key_permission = KeyPermission.RECORD

    @extend_schema(responses=s.TrailOutSerializer, summary="A trail as stored (never an answer)")
    def get(self, request: Request, trail_id: str) -> Response:
        trail = trail_get(caller=self.caller, trail_id=trail_id)
        cited = trail_cited_as_seen(caller=self.caller, trail=trail)
        return Response(s.TrailOutSerializer(trail_as_stored(trail, cited=cited)).data)

    @extend_schema(responses={204: None}, summary="Delete a trail")
    def delete(self, request: Request, trail_id: str) -> Response:
        trail_delete(caller=self.caller, trail_id=trail_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class RecallView(TenantAPIView):
    key_permission = KeyPermission.RECALL

    @extend_schema(request=s.RecallSerializer, responses=s.RecallResultSerializer,
                   summary="Recall before the first search: prefetch, hint or miss")
    def post(self, request: Request) -> Response:
        # A plainly valid body skips DRF's per-field work; anything else gets the serializer's errors.
        data = s.recall_input(request.data) or _validated(s.RecallSerializer, request)
        result = recall(
            caller=self.caller, scope=data["scope"], query=data["query"],
            budget_tokens=data.get("budget_tokens"), subject=data.get("subject", ""),
            shadow_details=data.get("shadow", False),
        )
        recall_answered.send(sender=RecallView, tenant=self.tenant, result=result)
        return Response(s.RecallResultSerializer(result).data)


class FeedbackView(TenantAPIView):
    key_permission = KeyPermission.FEEDBACK

    @extend_schema(request=s.FeedbackSerializer, responses=s.FeedbackResultSerializer,
                   summary="Feedback on a recall: negative quarantines the trail it served")
    def post(self, request: Request, recall_id: str) -> Response:
        data = _validated(s.FeedbackSerializer, request)
        event = feedback_apply(caller=self.caller, recall_id=recall_id, accepted=data["accepted"])
        return Response({"recall_id": str(event.pk), "accepted": data["accepted"]})


class StatsView(TenantAPIView):
    # Any valid key: the numbers cover only its scopes.
    @extend_schema(
        responses=s.StatsSerializer, summary="Recall counts and rates, trails by status",
        parameters=[OpenApiParameter("scope", {"type": "string", "maxLength": 200, "pattern": s.SCOPE_OR_EMPTY_PATTERN},
                                     description="Only this scope (a scope, as recorded; empty: every scope)")],
    )
    def get(self, request: Request) -> Response:
        query = s.StatsQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        scope = query.validated_data.get("scope")
        stats = stats_for_tenant(caller=self.caller, scope=scope or None)
        # The operating point covers the whole tenant: without a scope, for tenant-wide keys.
        summary = None if scope else calibration.operating_point_summary(caller=self.caller)
        if summary is not None:
            stats["calibration"] = summary
        return Response(stats)


class SubjectView(TenantAPIView):
    key_permission = KeyPermission.ERASE

    @extend_schema(responses={200: s.SubjectEraseResultSerializer},
                   summary="Erase every trail and logged query recorded with a subject")
    def delete(self, request: Request, subject: str) -> Response:
        deleted = subject_erase(caller=self.caller, subject=subject)
        return Response({"deleted": deleted})
