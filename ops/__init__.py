"""Operations endpoints: ``GET /healthz`` (liveness with the database state) and ``GET /metrics``
(Prometheus), and the metrics counted from what the services report (cachecore.signals)."""
