import pytest


@pytest.mark.parametrize("path", ["/console/", "/console/trails/", "/console/sections/", "/console/settings/",
                                  "/console/api-keys/", "/console/audit/", "/console/?tenant=*"])
def test_pages_render_for_superuser(world, path):
    r = world.client("superuser").get(path)
    assert r.status_code == 200, r.content[:2000]
