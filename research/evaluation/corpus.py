"""The corpus side of the harness: a full-text search over a tenant's sections (the simulated
agent's ``search``/``read`` tools) and the edits of the staleness experiment. Ingesting the
documentation tree is docingest's (``docingest.ingest``)."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Sequence

from django.db import connection

from cachecore.models import Section
from tenants.models import Tenant

SEARCH_LIMIT = 5

# ---- the agent's tools --------------------------------------------------------------------------

_WORD = re.compile(r"[A-Za-z0-9_]+")


def or_query(text: str) -> str:
    """A ``websearch_to_tsquery`` string with OR semantics over the text's words."""
    return " or ".join(dict.fromkeys(w.lower() for w in _WORD.findall(text)))


class FullTextSearch:
    """``search(q)`` → top ids by ``ts_rank_cd`` over the sections' English tsvectors (OR of
    the query's words; ties by id), ``read(id)`` → current text. The tsvectors live in a
    harness-owned temporary table with a GIN index, built once per run from the tenant's
    sections (``refresh`` after edits). Dropped by ``close`` or with the connection."""

    # ts_rank_cd normalisation 1: divide by 1 + log(document length), so long sections
    # matching many common words do not drown short precise ones.
    RANK_NORMALISATION = 1
    # The heading (the text's first paragraph) weighted A, the whole text D, as documentation
    # search engines weight titles. Measured on the full Python docs, 178 FAQ questions:
    # unweighted text finds a gold section for 4 % of the questions (2 % of the paraphrases),
    # title-weighted 78 % (16 %); normalisation 2 (divide by length) favours near-empty
    # sections (38 % / 19 % unweighted, 47 % / 13 % weighted).
    TSVECTOR = ("setweight(to_tsvector('english', split_part(text, E'\\n\\n', 1)), 'A') || "
                "setweight(to_tsvector('english', text), 'D')")

    def __init__(self, tenant: Tenant, *, limit: int = SEARCH_LIMIT) -> None:
        self.tenant, self.limit = tenant, limit
        self.table = f"eval_fts_{uuid.uuid4().hex[:12]}"
        with connection.cursor() as cur:
            cur.execute(f"CREATE TEMP TABLE {self.table} (external_id text PRIMARY KEY, tsv tsvector NOT NULL)")
            cur.execute(
                f"INSERT INTO {self.table} SELECT external_id, {self.TSVECTOR} "
                "FROM cachecore_section WHERE tenant_id = %s AND text IS NOT NULL",
                [tenant.pk],
            )
            cur.execute(f"CREATE INDEX ON {self.table} USING gin (tsv)")
            cur.execute(f"ANALYZE {self.table}")
        self.searches = 0
        self.reads = 0

    def search(self, q: str) -> list[str]:
        self.searches += 1
        terms = or_query(q)
        if not terms:
            return []
        with connection.cursor() as cur:
            cur.execute(
                f"SELECT external_id FROM {self.table}, websearch_to_tsquery('english', %s) q "
                f"WHERE tsv @@ q ORDER BY ts_rank_cd(tsv, q, {self.RANK_NORMALISATION}) DESC, external_id LIMIT %s",
                [terms, self.limit],
            )
            return [row[0] for row in cur.fetchall()]

    def read(self, section_id: str) -> str | None:
        self.reads += 1
        return (Section.objects.filter(tenant=self.tenant, external_id=section_id)
                .values_list("text", flat=True).first())

    def texts(self, section_ids: Iterable[str]) -> dict[str, str | None]:
        ids = list(section_ids)
        found = dict(Section.objects.filter(tenant=self.tenant, external_id__in=ids).values_list("external_id", "text"))
        return {sid: found.get(sid) for sid in ids}

    def refresh(self, section_ids: Sequence[str]) -> None:
        with connection.cursor() as cur:
            cur.execute(
                f"UPDATE {self.table} t SET tsv = {self.TSVECTOR.replace('text', 's.text')} FROM cachecore_section s "
                "WHERE s.tenant_id = %s AND s.external_id = t.external_id AND t.external_id = ANY(%s)",
                [self.tenant.pk, list(section_ids)],
            )

    def close(self) -> None:
        with connection.cursor() as cur:
            cur.execute(f"DROP TABLE IF EXISTS {self.table}")


# ---- edits for the staleness experiment ---------------------------------------------------------

_SENTENCE_END = re.compile(r"(?<=[.!?])(\s+)(?=[A-Z0-9\"'(`])")
EDIT_MARK = " (Revised: this sentence was changed in a later edition.)"


def edit_sentence(text: str) -> str:
    """Change one sentence of a section: the first sentence after the heading paragraph gets
    a clause appended (the whole text if it has no such sentence). Always changes the hash."""
    head, sep, body = text.partition("\n\n")
    target = body if sep else head
    match = _SENTENCE_END.search(target)
    cut = match.start() if match else len(target.rstrip())
    edited = target[:cut] + EDIT_MARK + target[cut:]
    return head + sep + edited if sep else edited
