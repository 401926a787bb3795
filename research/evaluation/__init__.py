"""Evaluation harness (issue 5): ingest documentation, run a deterministic simulated agent
with and without Trailcache, measure admission gates, staleness and matching quality.

Pure parts (no database): :mod:`.agent`, :mod:`.naive`, :mod:`.metrics`, :mod:`.progress`.
Database parts: :mod:`.corpus` (ingest, full-text search), :mod:`.harness` (the run),
:mod:`.report` (JSON, Markdown, PNG).
"""
