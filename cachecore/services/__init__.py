"""Every write of the engine, one module per area: ``sections``, ``trails``, ``recall``,
``feedback``, ``exports``, ``erasure``, ``retention``, ``rollups``, ``calibration``,
``reembed``, ``admission``, ``subjects``, and ``jobs`` (the queue primitives and the kind
registry). The API, the console and Celery tasks import each service from its module
(``from cachecore.services.trails import trail_record``); this package re-exports nothing, so
importing one service never imports them all, and ``tests/test_import_graph.py`` keeps the
modules free of cycles."""
