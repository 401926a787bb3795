"""Two installations on one host share the default Redis: each has its own queue and key prefix
(derived from its database, or TRAILCACHE_INSTANCE), so one's worker never takes the other's
tasks; every process of one installation (web, worker, beat) agrees on it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import redis
from celery import Celery

ROOT = Path(__file__).resolve().parents[2]
CODE = """
import django, json; django.setup()
from django.conf import settings as s
print(json.dumps({"queue": s.CELERY_TASK_DEFAULT_QUEUE,
                  "prefix": s.CELERY_BROKER_TRANSPORT_OPTIONS.get("global_keyprefix"),
                  "instance": s.TRAILCACHE_INSTANCE}))
"""


def _namespace(**env: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "TRAILCACHE_", "DATABASE_"))}
    clean.update({"DJANGO_SETTINGS_MODULE": "config.settings", "TRAILCACHE_DEV": "true", **env})
    result = subprocess.run([sys.executable, "-c", CODE], cwd=ROOT, env=clean, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_each_database_is_its_own_namespace_and_every_process_of_one_agrees():
    first = _namespace(DATABASE_URL="postgresql://u@db.example:5432/shop_a")
    again = _namespace(DATABASE_URL="postgresql://u@db.example:5432/shop_a")
    second = _namespace(DATABASE_URL="postgresql://u@db.example:5432/shop_b")
    assert first == again
    assert first["queue"] != second["queue"] and first["prefix"] != second["prefix"]
    assert first["queue"] == first["instance"] and first["prefix"] == first["instance"] + ":"
    assert first["queue"] != "celery"
    named = _namespace(DATABASE_URL="postgresql://u@db.example:5432/shop_a", TRAILCACHE_INSTANCE="shop-prod")
    assert named["queue"] == "shop-prod" and named["prefix"] == "shop-prod:"


def _app(url: str, namespace: dict[str, str]) -> Celery:
    """A Celery app configured as config/settings.py configures an installation."""
    app = Celery(namespace["instance"], set_as_current=False)
    app.conf.broker_url = url
    app.conf.task_default_queue = namespace["queue"]
    app.conf.broker_transport_options = {"global_keyprefix": namespace["prefix"]}
    return app


def test_one_installations_worker_never_receives_the_others_tasks(own_redis):
    shop_a = _namespace(DATABASE_URL="postgresql://u@127.0.0.1:54329/shop_a")
    shop_b = _namespace(DATABASE_URL="postgresql://u@127.0.0.1:54330/shop_b")
    app_a, app_b = _app(own_redis.url, shop_a), _app(own_redis.url, shop_b)
    app_a.send_task("cachecore.tasks.jobs_requeue", args=[])
    with app_b.connection_for_read() as conn:
        assert conn.default_channel.basic_get(shop_b["queue"]) is None  # B's queue: nothing of A's
    with app_a.connection_for_read() as conn:
        message = conn.default_channel.basic_get(shop_a["queue"])
        assert message is not None and message.headers["task"] == "cachecore.tasks.jobs_requeue"
    keys = {k.decode() for k in redis.Redis.from_url(own_redis.url).keys("*")}
    assert keys and all(k.startswith(shop_a["prefix"]) for k in keys), keys
