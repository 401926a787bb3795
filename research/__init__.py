"""Research: benchmark, evaluation, studies. Never imported by the product (cachecore, api,
adminui, tenants, config)."""
