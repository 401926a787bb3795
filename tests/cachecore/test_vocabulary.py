"""One vocabulary: the model choices are the engine's enums (same names and values), the
tenant's match modes are the engine's, and the merge margin has one definition."""

from __future__ import annotations

import inspect
from enum import StrEnum

import pytest
from django.core.management import call_command

from cachecore import models
from cachecore.engine import decide, outcome
from cachecore.services import recall as recall_service
from tenants import models as tenant_models


def _members(enum: type) -> dict[str, str]:
    return {name: member.value for name, member in enum.__members__.items()}


@pytest.mark.parametrize(("choices", "engine"), [
    (models.RecallOutcome, outcome.Outcome),
    (models.MissReason, outcome.MissReason),
    (tenant_models.MatchMode, decide.MatchMode),
])
def test_model_choices_are_the_engine_enums(choices: type, engine: type[StrEnum]) -> None:
    assert _members(choices) == _members(engine)
    assert all(choices(member.value) == member for member in engine)
    assert all(label for _, label in choices.choices)


def test_every_miss_reason_is_a_reason_a_miss_answers() -> None:
    assert set(outcome.MissReason) <= set(decide.Reason)


def test_choices_of_refuses_labels_that_do_not_name_every_member() -> None:
    with pytest.raises(TypeError, match="must name exactly"):
        models.choices_of("Partial", outcome.Outcome, {"PREFETCH": "Prefetch"})


def test_the_merge_margin_has_one_definition() -> None:
    assert recall_service.MERGE_SIMILARITY_MARGIN is decide.MERGE_SIMILARITY_MARGIN
    assert inspect.signature(decide.Policy).parameters["merge_margin"].default == decide.MERGE_SIMILARITY_MARGIN
    assert "MERGE_SIMILARITY_MARGIN =" not in inspect.getsource(recall_service)


@pytest.mark.django_db
def test_the_choices_need_no_migration() -> None:
    call_command("makemigrations", "cachecore", "tenants", check=True, dry_run=True, verbosity=0)
