"""Swagger UI's assets come from this service (``drf-spectacular-sidecar``), its bootstrap script
too (no inline script), under a Content-Security-Policy that names no third-party host."""

from __future__ import annotations

import re


def test_swagger_ui_loads_only_from_this_service(client, settings):
    settings.TRAILCACHE_CSP = True
    response = client.get("/api/v1/docs/")
    assert response.status_code == 200
    page = response.content.decode()
    policy = response["Content-Security-Policy"]
    assert "http" not in policy, policy  # no host named: 'self' only
    script_src = policy.split("script-src", 1)[1].split(";", 1)[0]
    assert "'unsafe-inline'" not in script_src and "'unsafe-eval'" not in script_src
    sources = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert sources and all(s.startswith("/") for s in sources), sources
    assert "<script>" not in page.replace(" ", "")  # the bootstrap is a script file of its own
    for source in sources:
        asset = client.get(source)
        assert asset.status_code == 200, source
        body = b"".join(asset.streaming_content) if asset.streaming else asset.content
        assert body, source
