"""Zero warm-up: a recall right after a large upsert answers as it will once the chunks are ready.
The upsert embeds chunks itself up to the per-request cap; past it, the rest go to the job and a
recall that needs them is a hint with ``reason: "coverage_pending"``, never a miss for want of
them. Real model, real database, through the REST API."""

from __future__ import annotations

from cachecore.models import Job, JobKind, Section
from cachecore.services.jobs import job_execute

# (section id, text, the question recorded, a rewording asked right after the upsert)
TOPICS = [
    ("tasks#retry", "Call self.retry() inside a bound task to run it again later; countdown sets the delay and "
     "max_retries the number of attempts.",
     "How do I make a task retry after it fails?", "What is the way to have a failing task run again later?"),
    ("tasks#rate", "The rate_limit option of a task caps how many of it a worker starts per second, minute or "
     "hour, for example '10/m'.",
     "How can I limit how often a task runs?", "Is there a way to throttle the number of task executions per minute?"),
    ("beat#schedule", "Periodic tasks are listed in beat_schedule with a schedule, a crontab() or a number of "
     "seconds, and the beat service sends them when due.",
     "How do I schedule a task to run every hour?", "What's the setup for running a job periodically, say hourly?"),
    ("workers#concurrency", "The --concurrency option sets how many child processes a worker runs; it defaults "
     "to the number of CPUs.",
     "How do I change how many processes a worker uses?", "Which option controls the number of worker processes?"),
    ("results#backend", "Task results are kept only when result_backend is set, for example to a Redis or "
     "database URL; without it AsyncResult.get() cannot return a value.",
     "How do I store the results of tasks?", "Where do task return values get saved, and how do I enable that?"),
    ("routing#queues", "task_routes sends tasks to named queues, and a worker started with -Q consumes only "
     "the queues it names.",
     "How do I send a task to a specific queue?", "Can I route some tasks to their own queue?"),
]
FILLERS = 144


def _sections() -> list[dict[str, str]]:
    # The first three topics come first (embedded in the upsert), the other three after the
    # fillers (past the cap: the job's).
    first = [{"id": s, "text": t} for s, t, _, _ in TOPICS[:3]]
    fillers = [{"id": f"changelog#{i}", "text": f"Version 5.{i // 10}.{i % 10} fixed issue {1000 + i} in the "
                f"{['kombu', 'billiard', 'vine', 'amqp'][i % 4]} dependency."} for i in range(FILLERS)]
    last = [{"id": s, "text": t} for s, t, _, _ in TOPICS[3:]]
    return first + fillers + last


def test_recalls_right_after_a_large_upsert_are_never_a_miss_for_pending_chunks(caller, settings):
    settings.TRAILCACHE_SYNC_CHUNK_LIMIT = 8
    sections = _sections()
    assert len(sections) == 150
    assert caller.put("/api/v1/sections", {"sections": sections}).status_code == 200
    ready = set(Section.objects.filter(tenant=caller.tenant, chunks_ready=True).values_list("external_id", flat=True))
    # Within the cap, in order: the first sections have their chunks already; the rest wait for the job.
    assert {s for s, *_ in TOPICS[:3]} <= ready and not ready & {s for s, *_ in TOPICS[3:]}
    job = Job.objects.get(tenant=caller.tenant, kind=JobKind.SECTION_CHUNKS)
    assert len(job.params["section_pks"]) == 150 - len(ready)
    trails = {}
    for section_id, _, question, _ in TOPICS:
        response = caller.record(query=question, cited=[section_id])
        assert response.status_code == 201, response.content
        trails[section_id] = response.json()["trail_id"]

    at_once = {section_id: caller.recall(reworded) for section_id, _, _, reworded in TOPICS}
    for section_id, answer in at_once.items():
        assert answer["outcome"] != "miss", (section_id, answer)
        assert answer["trail_id"] == trails[section_id], (section_id, answer)
        if section_id not in ready:
            assert (answer["outcome"], answer["reason"]) == ("hint", "coverage_pending"), answer
            assert [s["id"] for s in answer["sections"]] == [section_id]
            assert all("text" not in s for s in answer["sections"])
    # A verbatim repeat is the same question whatever the chunks: served.
    assert caller.recall(TOPICS[4][2])["outcome"] == "prefetch"

    job_execute(job_id=str(job.pk))
    assert Section.objects.filter(tenant=caller.tenant, chunks_ready=False).count() == 0
    for section_id, _, _, reworded in TOPICS:
        later = caller.recall(reworded)
        # Once chunks are ready: the same trail, now judged with its coverage (no pending reason).
        assert later["outcome"] != "miss" and later["trail_id"] == trails[section_id], (section_id, later)
        assert later["reason"] != "coverage_pending"
        if section_id in ready:
            # Its own coverage was there from the start, but while other sections waited for their
            # chunks the best-covering sections were not all known, so no rival counted against
            # it (its rival margin was unknown): on these questions the answers only get surer
            # once every chunk is there (a hint may become a prefetch).
            rank = {"miss": 0, "hint": 1, "prefetch": 2}
            assert rank[later["outcome"]] >= rank[at_once[section_id]["outcome"]], (section_id, later,
                                                                                   at_once[section_id])
