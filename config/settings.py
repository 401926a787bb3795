"""Trailcache settings: every value comes from the environment; production differs from
development only by values."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from config import embedded_db
from config.env import ConfigError, env_bool, env_int, env_list, env_networks, env_str, parse_database_url

BASE_DIR = Path(__file__).resolve().parent.parent

DEBUG = env_bool("DJANGO_DEBUG", False)
# Development conveniences (a built-in secret key, http resolvers on loopback): `make run`, the tests,
# the benchmark and the evaluation set TRAILCACHE_DEV=true; anything else runs in production mode.
# Production mode is the default: it fails closed.
TRAILCACHE_DEV = env_bool("TRAILCACHE_DEV", False)
_DEV_SECRET_KEY = "dev-insecure-trailcache-secret-key-change-me-in-production"
SECRET_KEY = env_str("DJANGO_SECRET_KEY", "")
if TRAILCACHE_DEV:
    SECRET_KEY = SECRET_KEY or _DEV_SECRET_KEY
elif not SECRET_KEY:
    raise ConfigError("DJANGO_SECRET_KEY is required when TRAILCACHE_DEV=false (production mode, the default): "
                      "set it to a long random value, e.g. from "
                      "`python -c 'import secrets; print(secrets.token_urlsafe(50))'`, "
                      "or set TRAILCACHE_DEV=true for development")
elif SECRET_KEY == _DEV_SECRET_KEY or len(SECRET_KEY) < 32:
    raise ConfigError("DJANGO_SECRET_KEY must be a random value of at least 32 characters in production mode")
if DEBUG and not TRAILCACHE_DEV:
    raise ConfigError("DJANGO_DEBUG=true is only allowed with TRAILCACHE_DEV=true (it shows settings and code)")
# API keys are stored as HMAC digests keyed with this pepper; rotating it invalidates all keys.
API_KEY_PEPPER = env_str("TRAILCACHE_API_KEY_PEPPER", SECRET_KEY)

ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI's assets, served as static files
    "django_filters",
    "django_htmx",
    "template_partials",
    "tenants",
    "cachecore",
    "api",
    "adminui",
    # GET /healthz and GET /metrics, and the metrics counted from what the services report.
    "ops",
]
# Apps the product never imports, for their management commands: the demo and `manage.py
# embedded_db` (devtools), the benchmark, evaluation and studies (research), documentation splitting
# and ingestion (docingest: ingest_docs). All of them in development mode; none in production mode
# unless named here (e.g. TRAILCACHE_OPTIONAL_APPS=docingest to run ingest_docs against a deployment).
OPTIONAL_APPS = ("devtools", "research", "docingest")
TRAILCACHE_OPTIONAL_APPS = env_list("TRAILCACHE_OPTIONAL_APPS", list(OPTIONAL_APPS) if TRAILCACHE_DEV else [])
if not set(TRAILCACHE_OPTIONAL_APPS) <= set(OPTIONAL_APPS):
    raise ConfigError(f"TRAILCACHE_OPTIONAL_APPS names apps among {', '.join(OPTIONAL_APPS)}, "
                      f"got {', '.join(TRAILCACHE_OPTIONAL_APPS)}")
INSTALLED_APPS += [app for app in OPTIONAL_APPS if app in TRAILCACHE_OPTIONAL_APPS]

MIDDLEWARE = [
    # Outermost: the database down → 503 with Retry-After on every route, never a 500 page.
    "api.middleware.DatabaseUnavailableMiddleware",
    "api.middleware.ApiBodyLimitMiddleware",
    # One tenant's API requests in progress, across every web process (api/middleware.py).
    "api.middleware.TenantConcurrencyMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "api.middleware.ApiInputMiddleware",
    "config.security.ContentSecurityPolicyMiddleware",
]

# Content-Security-Policy on every response (config/security.py). The test suite turns it off by
# default (Playwright's waits evaluate strings in the page, which the policy forbids); the tests
# about the policy turn it on.
TRAILCACHE_CSP = env_bool("TRAILCACHE_CSP", True)

# Cookies: HttpOnly and SameSite always; Secure (sent over https only) in production mode.
SESSION_COOKIE_SECURE = env_bool("TRAILCACHE_SECURE_COOKIES", not TRAILCACHE_DEV)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = True  # the console sends the token from the page (hx-headers), never from the cookie
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
# HSTS on https responses (a year in production; 0 turns it off), and what a TLS-terminating proxy
# says about the original scheme: TRAILCACHE_PROXY_SSL_HEADER=X-Forwarded-Proto trusts that header
# (only behind a proxy that sets it on every request).
SECURE_HSTS_SECONDS = env_int("TRAILCACHE_HSTS_SECONDS", 0 if TRAILCACHE_DEV else 31_536_000, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("TRAILCACHE_HSTS_INCLUDE_SUBDOMAINS", False)
_proxy_ssl_header = env_str("TRAILCACHE_PROXY_SSL_HEADER", "")
if _proxy_ssl_header:
    if not re.fullmatch(r"[A-Za-z0-9-]{1,64}", _proxy_ssl_header):
        raise ConfigError(f"TRAILCACHE_PROXY_SSL_HEADER must be a header name, got {_proxy_ssl_header!r}")
    SECURE_PROXY_SSL_HEADER = ("HTTP_" + _proxy_ssl_header.upper().replace("-", "_"), "https")
SECURE_SSL_REDIRECT = env_bool("TRAILCACHE_SSL_REDIRECT", False)
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^metrics$"]  # probes from inside the network
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# DATABASE_URL, else the embedded default's URL. Settings only read: the embedded server is
# started by `make`, scripts/ and `python -m config.embedded_db start`, never by importing this.
_database_url = os.environ.get("DATABASE_URL", "") or embedded_db.database_url()
DATABASES = {"default": parse_database_url(_database_url)}
DATABASES["default"]["CONN_MAX_AGE"] = env_int("DATABASE_CONN_MAX_AGE", 60, minimum=0)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
# Separate names let several test runs share one server without clashing.
DATABASES["default"]["TEST"] = {"NAME": env_str("TRAILCACHE_TEST_DB", "test_trailcache")}
# A generic cached plan can't route the nearest-neighbour query by scope size.
DATABASES["default"]["OPTIONS"].setdefault("options", "-c plan_cache_mode=force_custom_plan")

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Console logins: delayed per (account, address) and throttled per address after failures
# (tenants/login_guard.py); X-Forwarded-For is read only from these proxies' addresses.
AUTHENTICATION_BACKENDS = ["tenants.login_guard.ThrottledModelBackend"]
TRAILCACHE_LOGIN_MAX_FAILURES = env_int("TRAILCACHE_LOGIN_MAX_FAILURES", 5, minimum=1)
TRAILCACHE_LOGIN_MAX_FAILURES_PER_ADDRESS = env_int("TRAILCACHE_LOGIN_MAX_FAILURES_PER_ADDRESS", 20, minimum=1)
TRAILCACHE_LOGIN_LOCK_MINUTES = env_int("TRAILCACHE_LOGIN_LOCK_MINUTES", 15, minimum=1)
# Failures for one account from every address in a lock period before each further one delays
# that account's logins from addresses it never logged in from, by 2 s more each time up to the
# maximum (an attacker rotating addresses; tenants/login_guard.py).
TRAILCACHE_LOGIN_MAX_FAILURES_PER_ACCOUNT = env_int("TRAILCACHE_LOGIN_MAX_FAILURES_PER_ACCOUNT", 30, minimum=1)
TRAILCACHE_LOGIN_ACCOUNT_MAX_DELAY_SECONDS = env_int("TRAILCACHE_LOGIN_ACCOUNT_MAX_DELAY_SECONDS", 60, minimum=1)
TRAILCACHE_TRUSTED_PROXIES = env_networks("TRAILCACHE_TRUSTED_PROXIES")
# A tenant's API requests in progress at once, across every web process (0: no budget). Keep it
# below the installation's worker slots (workers x threads), so no tenant can take them all.
TRAILCACHE_TENANT_MAX_CONCURRENT_REQUESTS = env_int("TRAILCACHE_TENANT_MAX_CONCURRENT_REQUESTS", 4, minimum=0)

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
# Only for `collectstatic` in a deployment; whitenoise serves from the apps' folders otherwise.
STATIC_ROOT = env_str("TRAILCACHE_STATIC_ROOT", "") or None
# Serve straight from the apps' static folders: no collectstatic step for `make run`.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG
# The checkout's data folder: the embedded database, export files, the demo login of `make run`.
TRAILCACHE_DATA_DIR = Path(env_str("TRAILCACHE_DATA_DIR", str(BASE_DIR / ".data")))
MEDIA_ROOT = Path(env_str("TRAILCACHE_MEDIA_ROOT", str(TRAILCACHE_DATA_DIR / "media")))

LOGIN_URL = "/console/login/"
LOGIN_REDIRECT_URL = "/console/"
LOGOUT_REDIRECT_URL = "/console/login/"

# Body limit for the API: 1 MiB, answered with 413 by api.middleware.
API_MAX_BODY_BYTES = 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = API_MAX_BODY_BYTES + 1024

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["api.authentication.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["api.parsers.StrictJSONParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "api.exceptions.exception_handler",
    "UNAUTHENTICATED_USER": None,
    "DEFAULT_THROTTLE_CLASSES": ["api.throttling.KeyAndTenantRateThrottle"],
}
# Requests per minute per API key and per tenant (every key of it together); 0: no limit.
TRAILCACHE_RATE_PER_KEY_PER_MINUTE = env_int("TRAILCACHE_RATE_PER_KEY_PER_MINUTE", 6000, minimum=0)
TRAILCACHE_RATE_PER_TENANT_PER_MINUTE = env_int("TRAILCACHE_RATE_PER_TENANT_PER_MINUTE", 12000, minimum=0)
# An API key that authenticated is answered from the process's memory this many seconds (0: off):
# a revoked key is refused by every process within them (api/authentication.py).
TRAILCACHE_API_KEY_CACHE_SECONDS = env_int("TRAILCACHE_API_KEY_CACHE_SECONDS", 5, minimum=0)
# Recall log writes queued per web process for its writer thread, after the answer (0: every
# recall writes inline); a full queue writes inline (cachecore/services/recall_log.py).
TRAILCACHE_RECALL_LOG_QUEUE = env_int("TRAILCACHE_RECALL_LOG_QUEUE", 1000, minimum=0)
# How long a record or feedback naming a recall waits for another process to write it.
TRAILCACHE_RECALL_LINK_WAIT_MS = env_int("TRAILCACHE_RECALL_LINK_WAIT_MS", 1000, minimum=0)
# Exports queued or running at once per tenant; one more is answered 429.
TRAILCACHE_MAX_ACTIVE_EXPORTS = env_int("TRAILCACHE_MAX_ACTIVE_EXPORTS", 3, minimum=1)

SPECTACULAR_SETTINGS = {
    "TITLE": "Trailcache API",
    "DESCRIPTION": "Search-path cache for agentic RAG: record trails, recall them, verified by content hash.",
    "VERSION": "1.0.0",
    # OpenAPI 3.1 (JSON Schema 2020-12): ``propertyNames`` and ``type: null`` say what api.inputs
    # refuses in any key of a body, which 3.0's schema subset cannot (api/schema.py).
    "OAS_VERSION": "3.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI from this service's static files, never a CDN (config/security.py).
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "api.schema.add_error_responses",
                             "api.schema.document_input_limits"],
}

# Embedding model: a sentence-transformers ONNX export (384 dimensions).
TRAILCACHE_EMBEDDING_MODEL = env_str("TRAILCACHE_EMBEDDING_MODEL", "")
TRAILCACHE_EMBEDDING_THREADS = env_int("TRAILCACHE_EMBEDDING_THREADS", 1, minimum=1)
# Let onnxruntime's intra-op threads spin between runs (off: they would take the core of the
# process next to them; measured in research/embedding_throughput.py).
TRAILCACHE_EMBEDDING_SPINNING = env_bool("TRAILCACHE_EMBEDDING_SPINNING", False)
# Recent query vectors kept per tenant and process, keyed by (model version, normalised query); 0
# turns it off. At most CACHE_TENANTS tenants' caches per process (least recently used dropped);
# entries live CACHE_TTL_S seconds at most (how long another process keeps an erased subject's).
TRAILCACHE_EMBEDDING_CACHE_SIZE = env_int("TRAILCACHE_EMBEDDING_CACHE_SIZE", 512, minimum=0)
TRAILCACHE_EMBEDDING_CACHE_TENANTS = env_int("TRAILCACHE_EMBEDDING_CACHE_TENANTS", 64, minimum=1)
TRAILCACHE_EMBEDDING_CACHE_TTL_S = env_int("TRAILCACHE_EMBEDDING_CACHE_TTL_S", 300, minimum=1)
# The model version (cachecore/embedding.py): "dynamic-int8" (built from the package's file at
# setup, int8 products) or "int8-weights" (the package's file as shipped). Changing it re-embeds
# stored vectors in the background (services/reembed.py).
TRAILCACHE_EMBEDDING_VARIANT = env_str("TRAILCACHE_EMBEDDING_VARIANT", "dynamic-int8")
if TRAILCACHE_EMBEDDING_VARIANT not in ("dynamic-int8", "int8-weights"):
    raise ConfigError(f"TRAILCACHE_EMBEDDING_VARIANT must be dynamic-int8 or int8-weights, "
                      f"got {TRAILCACHE_EMBEDDING_VARIANT!r}")
# Where the built model file is kept (default: .data/models in the checkout).
TRAILCACHE_MODEL_DIR = env_str("TRAILCACHE_MODEL_DIR", str(BASE_DIR / ".data" / "models"))
# Scopes with fewer active trails than this are searched exactly; larger ones through HNSW.
TRAILCACHE_EXACT_SEARCH_MAX_TRAILS = env_int("TRAILCACHE_EXACT_SEARCH_MAX_TRAILS", 5000, minimum=0)
# Per request, an upsert embeds at most this many chunks itself (sections in order); the rest go to a
# background job, and recalls needing them answer a hint with reason "coverage_pending" meanwhile.
TRAILCACHE_SYNC_CHUNK_LIMIT = env_int("TRAILCACHE_SYNC_CHUNK_LIMIT", 200, minimum=0)

# This installation's namespace in the broker (queues, keys) and in Redis: two installations on one
# host sharing a Redis never take each other's tasks. Default: derived from the database, which is
# the same for every process of one installation (web, workers, beat) on every host.
_db = DATABASES["default"]
TRAILCACHE_INSTANCE = env_str("TRAILCACHE_INSTANCE", "") or "tc-" + hashlib.sha256(
    f"{_db['HOST']}:{_db['PORT']}/{_db['NAME']}".encode()).hexdigest()[:10]
if not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", TRAILCACHE_INSTANCE):
    raise ConfigError(f"TRAILCACHE_INSTANCE must match [A-Za-z0-9_.-]{{1,64}}, got {TRAILCACHE_INSTANCE!r}")

CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "redis://127.0.0.1:6379/0")
# Every message goes to this installation's queue (workers started with `-A config` consume it).
CELERY_TASK_DEFAULT_QUEUE = TRAILCACHE_INSTANCE
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Publishing must never hang a request when the broker is down: fail fast, the outbox sweeper retries.
if CELERY_BROKER_URL.startswith("sqla+"):
    # kombu's SQLAlchemy transport (make run's fallback) hands these to create_engine().
    CELERY_BROKER_TRANSPORT_OPTIONS = {"connect_args": {"connect_timeout": 2}}
else:
    CELERY_BROKER_TRANSPORT_OPTIONS = {"max_retries": 0, "socket_connect_timeout": 0.5, "socket_timeout": 2}
    if CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
        # Every key kombu writes (queues, unacked messages, bindings) under the installation's prefix.
        CELERY_BROKER_TRANSPORT_OPTIONS["global_keyprefix"] = f"{TRAILCACHE_INSTANCE}:"
# The same for RabbitMQ (amqp): seconds to wait for a connection.
CELERY_BROKER_CONNECTION_TIMEOUT = 2
# No retry loop around a publish either: a failed publish leaves the job row queued for the sweeper.
CELERY_TASK_PUBLISH_RETRY = False
# Job state lives in job rows, not in a result backend.
CELERY_TASK_IGNORE_RESULT = True
# A running job whose heartbeat (its progress) is older than this is handed back to the queue by
# the sweeper: its worker was killed. Longer than any job's quietest stretch (an export beats per batch).
TRAILCACHE_JOB_HEARTBEAT_TIMEOUT_SECONDS = env_int("TRAILCACHE_JOB_HEARTBEAT_TIMEOUT_SECONDS", 600, minimum=5)
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# Changed sections per upsert above which trails are invalidated in a background job.
TRAILCACHE_SYNC_INVALIDATION_MAX_SECTIONS = env_int("TRAILCACHE_SYNC_INVALIDATION_MAX_SECTIONS", 100, minimum=0)
# Networks a tenant's resolver may be in although they are not public (e.g. "10.20.0.0/16" for an
# internal resolver an operator trusts); empty: public addresses only (and loopback in development).
TRAILCACHE_RESOLVER_ALLOWED_NETWORKS = env_networks("TRAILCACHE_RESOLVER_ALLOWED_NETWORKS")
# Largest resolver answer read, in bytes; a longer one is a failed call.
TRAILCACHE_RESOLVER_MAX_BODY_BYTES = env_int("TRAILCACHE_RESOLVER_MAX_BODY_BYTES", 8 * 1024 * 1024, minimum=1024)
# Export files are deleted this many days after they are written.
TRAILCACHE_EXPORT_RETENTION_DAYS = env_int("TRAILCACHE_EXPORT_RETENTION_DAYS", 7, minimum=1)
# The bytes one tenant's export files may take on the export volume (finished, not yet deleted).
TRAILCACHE_EXPORT_QUOTA_BYTES_PER_TENANT = env_int("TRAILCACHE_EXPORT_QUOTA_BYTES_PER_TENANT", 2 * 1024**3,
                                                   minimum=1)
# GET /metrics: bearer token (unset: refused in production mode, loopback only in development);
# tenants (slugs) that get their own label (others: "other").
TRAILCACHE_METRICS_TOKEN = env_str("TRAILCACHE_METRICS_TOKEN", "")
TRAILCACHE_METRICS_TENANTS = env_list("TRAILCACHE_METRICS_TENANTS", [])

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # The subject of DELETE /api/v1/subjects/{subject} never reaches a log (config/logredact.py):
    # on the loggers that print request paths (so every handler they reach sees it redacted),
    # and on the handler for whatever else propagates here.
    "filters": {"subject_paths": {"()": "config.logredact.SubjectPathFilter"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["subject_paths"]}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        "django.db.backends": {"level": "INFO"},
        "django.request": {"filters": ["subject_paths"]},
        "django.server": {"filters": ["subject_paths"]},
    },
}
