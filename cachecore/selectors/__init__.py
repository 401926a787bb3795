"""Every read of the engine's tables, always scoped by tenant, one module per entity:
``trails``, ``sections``, ``citations``, ``recalls``, ``stats`` and ``nearest`` (the pgvector
search). Callers import the function from its module (``from cachecore.selectors.trails import
trail_get``); this package re-exports nothing."""
