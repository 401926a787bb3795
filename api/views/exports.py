"""Compliance exports over the API: request (202), poll, download. The same tenant's API key
only; keys limited to scope prefixes may not export (an export spans the whole tenant)."""

from __future__ import annotations

import re
from typing import Any

from django.http import FileResponse
from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from api.fields import StrictCharField
from api.inputs import parse_bounded_instant
from api.views.core import TenantAPIView, _validated
from cachecore.models import Job, JobStatus, TrailStatus
from cachecore.services.exports import export_download, export_get, export_request
from tenants.models import KeyPermission


class ExportRequestSerializer(serializers.Serializer):
    format = serializers.ChoiceField(choices=["csv", "jsonl"])
    scope = StrictCharField(required=False, allow_blank=True, max_length=200)
    since = StrictCharField(required=False, allow_blank=True, max_length=40,
                                  help_text="ISO 8601 date or datetime, inclusive")
    until = StrictCharField(required=False, allow_blank=True, max_length=40,
                                  help_text="ISO 8601 date (through that day) or datetime, exclusive")
    subject = StrictCharField(required=False, allow_blank=True, max_length=200)
    status = serializers.ChoiceField(choices=TrailStatus.values, required=False, allow_blank=True)

    def _instant(self, value: str) -> str:
        if value:
            try:
                parse_bounded_instant(value)
            except ValueError as exc:
                raise serializers.ValidationError(str(exc))
        return value

    def validate_since(self, value: str) -> str:
        return self._instant(value)

    def validate_until(self, value: str) -> str:
        return self._instant(value)


class ExportAcceptedSerializer(serializers.Serializer):
    export_id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=JobStatus.values)


class ProgressSerializer(serializers.Serializer):
    done = serializers.IntegerField()
    total = serializers.IntegerField(allow_null=True)


class ExportStatusSerializer(ExportAcceptedSerializer):
    progress = ProgressSerializer()
    download_url = serializers.CharField(allow_null=True)
    rows = serializers.IntegerField(allow_null=True)
    expires_at = serializers.DateTimeField(allow_null=True)
    error = serializers.CharField(allow_blank=True)


_ERROR_CODE = re.compile(r"[a-z][a-z0-9_]{0,63}")


def export_status(job: Job) -> dict[str, Any]:
    downloadable = job.status == JobStatus.DONE and not job.file_deleted_at
    return {
        "export_id": str(job.pk), "status": job.status,
        "progress": {"done": job.progress_done, "total": job.progress_total},
        "download_url": reverse("api-export-download", args=[job.pk]) if downloadable else None,
        "rows": job.result.get("rows"), "expires_at": job.file_expires_at, "error": public_error(job.error),
    }


def public_error(error: str) -> str:
    """A failed job's stable short code (``too_many_attempts``); an exception's text (which may
    name files, hosts or data) is for the log and the console, never for an API caller."""
    if not error or _ERROR_CODE.fullmatch(error):
        return error
    return "internal_error"


class ExportsView(TenantAPIView):
    key_permission = KeyPermission.EXPORT

    @extend_schema(request=ExportRequestSerializer, responses={202: ExportAcceptedSerializer},
                   summary="Export the tenant's stored queries (CSV or JSONL), in the background")
    def post(self, request: Request) -> Response:
        data = _validated(ExportRequestSerializer, request)
        job = export_request(
            caller=self.caller, format=data["format"], scope=data.get("scope"), since=data.get("since"),
            until=data.get("until"), subject=data.get("subject"), status=data.get("status"),
        )
        return Response({"export_id": str(job.pk), "status": job.status}, status=status.HTTP_202_ACCEPTED)


class ExportDetailView(TenantAPIView):
    key_permission = KeyPermission.EXPORT

    @extend_schema(responses=ExportStatusSerializer, summary="An export's status, progress and download URL")
    def get(self, request: Request, export_id: str) -> Response:
        return Response(export_status(export_get(caller=self.caller, export_id=export_id)))


class ExportDownloadView(TenantAPIView):
    key_permission = KeyPermission.EXPORT

    @extend_schema(responses={(200, "text/csv"): bytes, (200, "application/x-ndjson"): bytes},
                   summary="The export file, CSV or JSON Lines as requested (deleted after 7 days: 410)")
    def get(self, request: Request, export_id: str) -> FileResponse:
        export = export_download(caller=self.caller, export_id=export_id)
        return FileResponse(open(export.path, "rb"), as_attachment=True, filename=export.filename,
                            content_type=export.content_type)
