"""The documentation corpora of the replay studies and their question sets, in one shape.

- ``faq``: the Python 3.11 docs (Debian ``python3.11-doc``, reST ``_sources``) with the FAQ set
  (``tests/data/eval/python_faq.jsonl`` + ``python_faq_hard.jsonl``); groups are FAQ entry ids.
- ``celery``: the Celery 5.2.6 docs (Debian ``python-celery-doc``, Sphinx HTML) with the
  hand-written hard set ``tests/data/eval/celery_hard.jsonl``; groups are the items' topics.
- ``flask``: the Flask 2.2.2 docs (Debian ``python-flask-doc``, Sphinx HTML) with the
  hand-written hard set ``tests/data/eval/flask_hard.jsonl``, written the same way; groups are
  the items' topics.
- ``pytest``: the pytest 7.2.1 docs (Debian ``python-pytest-doc``, Sphinx HTML) with the
  hand-written hard set ``tests/data/eval/pytest_hard.jsonl``, written the same way after every
  choice of the matching was made and read once since, to judge the three-corpus fit (nothing is
  fitted on it); groups are the items' topics.
- ``click``: the Click 8.1.3 docs (Debian ``python-click-doc``, Sphinx HTML) with the
  hand-written hard set ``tests/data/eval/click_hard.jsonl``, written the same way on 6 December
  2026, after the scorer was fitted on three corpora and judged on pytest; groups are the items'
  topics.

An item is one recorded question with its gold section(s), its same-need rewordings and its
close-but-different questions; the side (calibration / held-out) comes from
``research.splits``. Beside each set, ``<set>_light.jsonl`` (where present) gives each item two
*light* rewordings (the question typed again with most of its words: another inflection, one
synonym, a generic word added or dropped, a clause moved) and one *near miss* (the question with
one change that makes it another need: a version, a sibling object, the opposite direction), the
shape of repeat traffic that the hard sets, whose rewordings avoid the question's words, lack.
Research only: product code never imports this module.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from research.splits import REPO_ROOT, celery_side, click_side, faq_side, flask_side, pytest_side

EVAL_DIR = REPO_ROOT / "tests" / "data" / "eval"
FAQ_SET = EVAL_DIR / "python_faq.jsonl"
FAQ_HARD = EVAL_DIR / "python_faq_hard.jsonl"
CELERY_SET = EVAL_DIR / "celery_hard.jsonl"
PYTHON_DOCS = Path("/usr/share/doc/python3.11/html/_sources")
CELERY_DOCS = Path("/usr/share/doc/python-celery-doc/html")
FLASK_SET = EVAL_DIR / "flask_hard.jsonl"
FLASK_DOCS = Path("/usr/share/doc/python-flask-doc/html")
PYTEST_SET = EVAL_DIR / "pytest_hard.jsonl"
PYTEST_DOCS = Path("/usr/share/doc/python-pytest-doc/html")
CLICK_SET = EVAL_DIR / "click_hard.jsonl"
CLICK_DOCS = Path("/usr/share/doc/python-click-doc/html")
# The Celery HTML tree without the reST copies (_sources), highlighted code (_modules), static
# files and the generated index/search pages.
CELERY_SUBTREES = (
    "userguide", "getting-started", "django", "tutorials", "reference", "internals", "history",
    "faq.html", "glossary.html", "whatsnew-5.2.html", "community.html", "contributing.html",
    "copyright.html",
)
# The Flask HTML tree without its reST copies, static files, the changelog, the licence,
# contributing notes and the generated index/search pages.
FLASK_SUBTREES = (
    "api.html", "appcontext.html", "async-await.html", "blueprints.html", "cli.html", "config.html",
    "debugging.html", "deploying", "design.html", "errorhandling.html", "extensiondev.html",
    "extensions.html", "installation.html", "logging.html", "patterns", "quickstart.html",
    "reqcontext.html", "security.html", "server.html", "shell.html", "signals.html", "templating.html",
    "testing.html", "tutorial", "views.html",
)
# The pytest HTML tree's guides, explanations, reference, examples and deprecation notes: without
# its reST copies, static files, the changelog, announcements, historical and contributor pages.
PYTEST_SUBTREES = (
    "how-to", "explanation", "reference", "example", "getting-started.html", "deprecations.html",
    "backwards-compatibility.html",
)
# The Click HTML pages without their reST copies, static files, the changelog, the licence and
# the index page.
CLICK_SUBTREES = (
    "quickstart.html", "options.html", "parameters.html", "commands.html", "arguments.html", "complex.html",
    "advanced.html", "setuptools.html", "why.html", "upgrading.html", "utils.html", "prompts.html",
    "documentation.html", "testing.html", "shell-completion.html", "exceptions.html", "api.html", "wincmd.html",
    "unicode-support.html", "contrib.html",
)
KINDS = frozenset({"parameter", "object", "version", "direction", "comparison", "false_premise", "other"})


@dataclass(frozen=True)
class Close:
    """A close-but-different question: same topic words, another need (unless the source
    section answers it anyway)."""
    question: str
    kind: str
    answered_by_source: bool
    # The section(s) that answer it, where the set says (Celery's ``answer``; empty: none does,
    # or the set does not say).
    answer: tuple[str, ...] = ()


@dataclass(frozen=True)
class Item:
    id: str
    group: str
    side: str
    question: str
    gold: tuple[str, ...]
    same_need: tuple[str, ...]
    close: tuple[Close, ...]
    # From ``<set>_light.jsonl``: light rewordings (same need) and one-change near misses.
    light: tuple[str, ...] = ()
    near_miss: tuple[Close, ...] = ()

    def same_need_at(self, index: int) -> str:
        """The rewording a round uses: round r takes the (r-1)-th, cycling."""
        return self.same_need[index % len(self.same_need)]

    def close_at(self, index: int) -> Close | None:
        return self.close[index % len(self.close)] if self.close else None


@dataclass(frozen=True)
class Corpus:
    name: str
    docs: Path
    subtrees: tuple[str, ...]
    scope: str
    # The Debian package that installs ``docs``.
    package: str
    # Reads the corpus's question set.
    load: Callable[[], list[Item]]
    # Whether its close questions name the sections that answer them (``Close.answer``): the
    # hand-written hard sets (``hard_set_items``) do, the FAQ's do not.
    names_answers: bool = True

    def items(self) -> list[Item]:
        return self.load()

    def available(self) -> bool:
        return self.docs.is_dir()


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def light_path(path: Path) -> Path:
    """The light set beside a question set: ``celery_hard.jsonl`` → ``celery_light.jsonl``."""
    return path.with_name(path.name.replace("_hard.jsonl", ".jsonl").replace(".jsonl", "_light.jsonl"))


def _with_light(items: list[Item], path: Path) -> list[Item]:
    """``items`` with the light rewordings and near misses of ``light_path(path)``, if present."""
    light = light_path(path)
    if not light.is_file():
        return items
    by_id = {d["id"]: d for d in _jsonl(light)}
    return [replace(i, light=tuple(by_id[i.id]["light"]),
                    near_miss=tuple(Close(m["question"], m["change"], False) for m in by_id[i.id]["near_miss"]))
            if i.id in by_id else i for i in items]


def faq_items(base: Path = FAQ_SET, hard: Path = FAQ_HARD) -> list[Item]:
    """The Python FAQ entries: the set's paraphrase and the hard set's extra one as the two
    same-need questions, the hard set's twins as the close-but-different ones."""
    extra = {d["id"]: d for d in _jsonl(hard)}
    out = []
    for e in _jsonl(base):
        h = extra.get(e["id"], {})
        out.append(Item(
            id=e["id"], group=e["id"], side=faq_side(e["id"]), question=e["question"], gold=tuple(e["gold"]),
            same_need=tuple(e.get("paraphrases", []) + h.get("paraphrases_extra", [])),
            close=tuple(Close(t["question"], t["kind"], bool(t["answered_by_source"])) for t in h.get("twins", [])),
        ))
    return _with_light(out, base)


def hard_set_items(path: Path, side: Callable[[str], str]) -> list[Item]:
    """A hand-written hard set (Celery's, Flask's): one item per line, grouped by ``topic``."""
    return _with_light([Item(
        id=d["id"], group=d["topic"], side=side(d["topic"]), question=d["question"], gold=(d["gold"],),
        same_need=tuple(d["same_need"]),
        close=tuple(Close(c["question"], c["kind"], bool(c["answered_by_source"]), tuple(c.get("answer", ())))
                    for c in d["close"]),
    ) for d in _jsonl(path)], path)


def celery_items(path: Path = CELERY_SET) -> list[Item]:
    return hard_set_items(path, celery_side)


def flask_items(path: Path = FLASK_SET) -> list[Item]:
    return hard_set_items(path, flask_side)


def pytest_items(path: Path = PYTEST_SET) -> list[Item]:
    return hard_set_items(path, pytest_side)


def click_items(path: Path = CLICK_SET) -> list[Item]:
    return hard_set_items(path, click_side)


CORPORA = {
    "faq": Corpus("faq", PYTHON_DOCS, (), "faq", "python3.11-doc", faq_items, names_answers=False),
    "celery": Corpus("celery", CELERY_DOCS, CELERY_SUBTREES, "celery", "python-celery-doc", celery_items),
    "flask": Corpus("flask", FLASK_DOCS, FLASK_SUBTREES, "flask", "python-flask-doc", flask_items),
    "pytest": Corpus("pytest", PYTEST_DOCS, PYTEST_SUBTREES, "pytest", "python-pytest-doc", pytest_items),
    "click": Corpus("click", CLICK_DOCS, CLICK_SUBTREES, "click", "python-click-doc", click_items),
}


def small_tenant_sections(all_ids: Sequence[str], items: Sequence[Item], size: int,
                          *, seed: int = 0) -> tuple[set[str], list[Item]]:
    """A small tenant carved out of a corpus: about half of ``size`` sections are the gold
    sections of items drawn at random (whole items, as long as their gold fits), the rest other
    sections drawn at random. Returns the section ids kept and the items whose gold they hold.
    A close question's answer is then often not in the tenant at all, as in small documentation."""
    rng = random.Random(seed)
    present = set(all_ids)
    pool = [i for i in items if i.gold and all(g in present for g in i.gold)]
    rng.shuffle(pool)
    kept: set[str] = set()
    chosen: list[Item] = []
    for item in pool:
        if len(kept | set(item.gold)) > size // 2:
            continue
        kept |= set(item.gold)
        chosen.append(item)
    others = sorted(present - kept)
    rng.shuffle(others)
    kept |= set(others[:max(0, size - len(kept))])
    return kept, chosen


def ingest_corpus(tenant: object, root: Path, subtrees: Sequence[str] = (),
                  keep: Callable[[list[str]], set[str]] | None = None) -> set[str]:
    """The corpus's sections into ``tenant``, then every section's chunks, as the tenant's chunk
    job gives them (recall weighs the cited text against the best-covering section of the whole
    corpus: the rival evidence). ``keep``: given every section id, the ones to ingest (a small
    tenant, ``small_tenant_sections``). Returns the section ids."""
    from docingest.ingest import collect_sections, ingest_sections
    from docingest.progress import Progress

    sections = collect_sections(root, subtrees)
    if keep is not None:
        wanted = keep([s.id for s in sections])
        sections = [s for s in sections if s.id in wanted]
    ids = {s.id for s in sections}
    with Progress("ingest sections", len(sections)) as bar:
        ingest_sections(tenant=tenant, sections=sections, on_batch=bar.step, chunks="defer")
    with Progress("chunk embeddings", len(ids)) as bar:
        chunks_ensure_cached(tenant=tenant, section_ids=list(ids), on_batch=bar.step)
    return ids


def record_items(tenant: object, corpus: Corpus, items: Sequence[Item], known: set[str], *,
                 rewordings: bool = False) -> dict[str, str]:
    """One trail per item in ``tenant``, in the corpus's scope: the item's question, citing its
    gold sections that are in the corpus (``known``) as the search that returned them, accepted
    by the caller. ``rewordings``: its first same-need rewording instead, recorded as an agent's
    accepted answer after a recall (no steps, the user's signal, as the README's loop records
    one), for the items that have one. Returns item id → trail id."""
    from cachecore.services.trails import trail_record
    from tenants.caller import tenant_caller

    caller = tenant_caller(tenant, actor_label="research:corpora")
    trail_of: dict[str, str] = {}
    for i in items:
        if rewordings and not i.same_need:
            continue
        gold = [g for g in i.gold if g in known]
        query = i.same_need[0] if rewordings else i.question
        steps = [] if rewordings else [{"tool": "search", "args": {"q": query}, "returned": gold}]
        signal = {"source": "user" if rewordings else "caller", "accepted": True}
        trail_of[i.id] = str(trail_record(caller=caller, scope=corpus.scope, query=query, steps=steps,
                                          cited=gold, signal=signal).pk)
    return trail_of


# Chunk vectors computed once per (section hash, model) and kept under reports/cache/: the
# studies ingest the same corpora again and again, and the Python docs' 28k chunks take minutes.
CHUNK_CACHE_DIR = REPO_ROOT / "reports" / "cache"
# In the files' names: vectors of texts embedded one graph run each (Embedder.embed). Files of
# an earlier layout (texts embedded in padded batches, other vectors) are not read.
_CACHE_LAYOUT = "alone"


def _cache_file(cache_dir: Path, kind: str, model: str) -> Path:
    return cache_dir / f"{kind}-{model.replace('/', '_').replace('@', '-')}-{_CACHE_LAYOUT}.pkl"


def chunks_ensure_cached(*, tenant: object, section_ids: list[str],
                         on_batch: Callable[[int], None] | None = None,
                         cache_dir: Path = CHUNK_CACHE_DIR) -> int:
    """``docingest.ingest.chunks_ensure`` with a cache: sections whose (hash, model) chunks were
    computed before get them from ``reports/cache`` (the same rows ``section_chunks_compute``
    writes: ``split_chunks`` of the text, the model's vectors); the others are computed by the
    product's own path and their vectors added to the cache. Returns sections computed."""
    import pickle

    from django.db import transaction

    from cachecore.embedding import get_embedder
    from cachecore.engine.text import split_chunks
    from cachecore.models import Section, SectionChunk
    from docingest.ingest import chunks_ensure

    model = get_embedder().version
    path = _cache_file(cache_dir, "chunks", model)
    cache: dict[str, object] = pickle.loads(path.read_bytes()) if path.is_file() else {}
    pending = list(Section.objects.filter(tenant=tenant, external_id__in=section_ids, chunks_ready=False)
                   .exclude(text=None).only("pk", "tenant_id", "text", "sha256"))
    hits = [s for s in pending if s.sha256 in cache]
    with transaction.atomic():
        rows = []
        for s in hits:
            vectors = cache[s.sha256]
            for ordinal, (chunk, vector) in enumerate(zip(split_chunks(s.text), vectors, strict=True)):
                rows.append(SectionChunk(section=s, tenant_id=s.tenant_id, ordinal=ordinal, sha256=s.sha256,
                                         text=chunk, embedding=vector, embedding_model=model))
        SectionChunk.objects.bulk_create(rows, batch_size=1000)
        Section.objects.filter(pk__in=[s.pk for s in hits]).update(chunks_ready=True)
    if on_batch and hits:
        on_batch(len(hits))
    missing = [s for s in pending if s.sha256 not in cache]
    computed = chunks_ensure(tenant=tenant, section_ids=[s.external_id for s in missing], on_batch=on_batch)
    if missing:
        _cache_add(cache, SectionChunk, missing, model=model)
        _cache_write(path, cache)
    _sentences_ensure_cached(tenant=tenant, section_ids=section_ids, model=model,
                             path=_cache_file(cache_dir, "sentences", model))
    return computed


def _sentences_ensure_cached(*, tenant: object, section_ids: list[str], model: str, path: Path) -> None:
    """The sections' sentence rows as ``section_chunks_compute`` writes them, from the cache at
    ``path`` where the (hash, model) was seen before, else by the product's own
    ``section_sentences_compute``; every section's vectors end up in the cache."""
    import pickle

    from django.db import transaction

    from cachecore.models import Section, SectionSentence
    from cachecore.services.sections import section_sentences_compute

    cache: dict[str, object] = pickle.loads(path.read_bytes()) if path.is_file() else {}
    sections = list(Section.objects.filter(tenant=tenant, external_id__in=section_ids, chunks_ready=True)
                    .exclude(text=None).only("pk", "text", "sha256"))
    have = set(SectionSentence.objects.filter(section__in=sections, embedding_model=model)
               .values_list("section_id", flat=True).distinct())
    hits = [s for s in sections if s.pk not in have and s.sha256 in cache]
    with transaction.atomic():
        SectionSentence.objects.bulk_create(
            [SectionSentence(section=s, ordinal=i, sha256=s.sha256, embedding=v, embedding_model=model)
             for s in hits for i, v in enumerate(cache[s.sha256])], batch_size=1000)
    missing = [s.pk for s in sections if s.pk not in have and s.sha256 not in cache]
    for start in range(0, len(missing), 50):
        section_sentences_compute(section_pks=missing[start:start + 50])
    uncached = [s for s in sections if s.sha256 not in cache]
    if uncached:
        _cache_add(cache, SectionSentence, uncached, model=model)
        _cache_write(path, cache)


def _cache_add(cache: dict[str, object], rows: type, sections: list, *, model: str) -> None:
    """Each section's stored vectors of ``rows`` (a model of per-section vectors with an
    ordinal: chunks or sentences) under its hash in ``cache``, in order."""
    import numpy as np

    by_section: dict[int, list] = {}
    for pk, vector in (rows.objects.filter(section_id__in=[s.pk for s in sections], embedding_model=model)
                       .order_by("section_id", "ordinal").values_list("section_id", "embedding")):
        by_section.setdefault(pk, []).append(np.asarray(vector, dtype=np.float32))
    for s in sections:
        if s.pk in by_section:
            cache[s.sha256] = np.stack(by_section[s.pk])


def _cache_write(path: Path, cache: dict[str, object]) -> None:
    import pickle

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(pickle.dumps(cache))
    tmp.replace(path)
