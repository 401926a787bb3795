"""The verifier's reasons never quote the answer: the answer is not stored, and neither is any
sentence, clause or phrase of it (the reasons keep scores, counts and which check failed)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from django.db import connection

from cachecore.engine.verifier import Evidence, Verifier

TEXT = "Acme reads its configuration from /etc/acme/acme.toml. It reloads the file on SIGHUP."
QUERY = "Where does Acme read its configuration from?"
MARKER = "Zorblax7731"
FAILING = [
    # the matched non-answer phrase holds the marker
    f"I {MARKER} could not find where Acme reads its configuration from.",
    # a clause that reads like a non-answer (no phrase matched)
    f"The sections here are silent about {MARKER} and the configuration file.",
    # a clause that reads like a non-answer, with unsupported sentences around it
    f"Unfortunately I am unable to help with {MARKER} here. {MARKER} bakes bread on Tuesdays in Paris.",
    # unsupported sentences only
    f"{MARKER} is a purple giraffe living on the moon. It eats {MARKER} cheese every morning at dawn.",
]


@pytest.mark.parametrize("answer", FAILING)
def test_a_failed_verdict_holds_no_text_of_the_answer_in_the_row_or_the_api(make_caller, answer):
    caller = make_caller(admission_policy="signal+verifier")
    caller.upsert({"doc#config": TEXT})
    response = caller.record(query=QUERY, cited=["doc#config"], answer=answer)
    assert response.status_code == 201, response.content
    trail_id = response.json()["trail_id"]
    shown = caller.get(f"/api/v1/trails/{trail_id}").json()
    assert shown["verdict"]["passed"] is False and shown["verdict"]["reasons"]
    assert MARKER not in json.dumps(shown)
    with connection.cursor() as cur:
        cur.execute("SELECT row_to_json(t)::text FROM cachecore_trail t WHERE id = %s", [trail_id])
        (row,) = cur.fetchone()
    assert MARKER not in row


def test_a_clause_that_reads_like_a_non_answer_is_named_by_position_not_quoted():
    verifier = Verifier(lambda texts: np.ones((len(texts), 4), dtype=np.float32))
    clauses = [f"The sections are silent about {MARKER}", "and more words here"]
    evidence = Evidence(sentences=[clauses[0]], clauses=clauses, pattern=None,
                        to_non_answer=np.array([0.95, 0.1]), to_answer=np.array([0.1, 0.1]),
                        support=np.array([0.0]), words=np.array([6.0]), answer_support=0.0)
    verdict = verifier.decide(evidence)
    assert verdict.non_answer and not verdict.passed
    assert MARKER not in json.dumps(verdict.as_dict())
    assert verdict.reasons[0] == "reads like a non-answer (0.95, clause 1 of 2)"
