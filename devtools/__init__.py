"""Development conveniences, installed in development mode only (config/settings.py,
TRAILCACHE_OPTIONAL_APPS): the demo tenant ``make run`` seeds (``seed_demo``, devtools.demo) and
``manage.py embedded_db``. The product never imports it (tests/test_import_boundaries.py)."""
