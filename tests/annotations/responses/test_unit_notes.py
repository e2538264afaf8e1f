"""Special answers and the unit's free text (issue 41 part 3), for every registered protocol:
a special answer replaces a criterion's judgements (none stored, so scores and agreement never see
it), is stored as such, and the comment beside it; what the campaign does not offer is refused."""

import random

import pytest
from django.core.exceptions import ValidationError

from annotations import protocols
from annotations.models import Output, UnitNote
from annotations.services.assignments import assignment_next
from annotations.services.campaigns import campaign_create
from annotations.services.submissions import unit_submit
from tests.annotations.factories import AnnotatorFactory, DatasetFactory, ItemFactory, OutputFactory, SystemFactory
from tests.protocol_plugin import campaign_settings, every_protocol

pytestmark = pytest.mark.django_db
SPECIAL = ["[missing]", "[instructions fault]", "cannot judge"]


def _campaign(protocol, **options):
    dataset = DatasetFactory()
    systems = [SystemFactory(dataset=dataset, name=f"sys{i}") for i in range(4)]
    for i in range(3):
        item = ItemFactory(dataset=dataset, position=i, external_id=f"i{i}", source=f"Source {i}.")
        for system in systems:
            OutputFactory(item=item, system=system, text=f"Output {i} of {system.name} reads fine.")
    return campaign_create(
        dataset=dataset,
        name=f"notes-{protocol}",
        protocol=protocol,
        criteria=["adequacy", "fluency"],
        redundancy=1,
        seed=1,
        options=options,
        **campaign_settings(protocol),
    )


def _simulated(campaign, assignment, criterion):
    outputs = {o.pk: o.text for o in Output.objects.filter(pk__in=assignment.shown_order)}
    shown = [{"id": pk, "text": outputs[pk]} for pk in assignment.shown_order]
    rng = random.Random(2)
    return protocols.of(campaign).simulated_answers(campaign, criterion, shown, lambda o: 60.0, rng)


def _taken(campaign):
    annotator = AnnotatorFactory(project=campaign.dataset.project)
    assignment, _ = assignment_next(campaign=campaign, annotator=annotator)
    return annotator, assignment


@pytest.mark.parametrize("protocol", every_protocol())
def test_a_special_answer_replaces_the_criterions_judgements(protocol, registered):
    campaign = _campaign(protocol, special_answers=SPECIAL, unit_text="Comment")
    annotator, assignment = _taken(campaign)
    answers = _simulated(campaign, assignment, "adequacy") + [
        {"criterion": "fluency", "special": "[missing]"},
        {"comment": "  Source <b>garbled</b>  "},
    ]
    unit_submit(
        annotator=annotator, assignment_id=assignment.pk, judgements=answers, shown_order=assignment.shown_order
    )
    model = protocols.of(campaign).model
    assert model.objects.filter(campaign=campaign, criterion="adequacy").count() > 0
    assert not model.objects.filter(campaign=campaign, criterion="fluency").exists()
    notes = {(n.criterion, n.special, n.text) for n in UnitNote.objects.filter(campaign=campaign)}
    assert notes == {("fluency", "[missing]", ""), ("", "", "Source <b>garbled</b>")}
    note = UnitNote.objects.filter(campaign=campaign).first()
    assert note.annotator == annotator and note.outputs == sorted(assignment.unit.outputs)
    assignment.refresh_from_db()
    assert assignment.status == "done"


@pytest.mark.parametrize("protocol", every_protocol())
def test_every_criterion_may_be_answered_specially(protocol, registered):
    campaign = _campaign(protocol, special_answers=SPECIAL)
    annotator, assignment = _taken(campaign)
    answers = [
        {"criterion": "adequacy", "special": "cannot judge"},
        {"criterion": "fluency", "special": "cannot judge"},
    ]
    unit_submit(
        annotator=annotator, assignment_id=assignment.pk, judgements=answers, shown_order=assignment.shown_order
    )
    assert not protocols.of(campaign).model.objects.filter(campaign=campaign).exists()
    assert UnitNote.objects.filter(campaign=campaign, special="cannot judge").count() == 2


@pytest.mark.parametrize(
    "options, extra, reason",
    [
        ({}, [{"criterion": "fluency", "special": "[missing]"}], "this campaign offers no special answers"),
        (
            {"special_answers": ["[missing]"]},
            [{"criterion": "fluency", "special": "n/a"}],
            "'n/a' is not one of [missing]",
        ),
        ({}, [{"comment": "hi"}], "this campaign has no free-text field"),
        ({"unit_text": "Comment", "text_max_length": 5}, [{"comment": "too long"}], "comment longer than 5 characters"),
    ],
)
def test_what_the_campaign_does_not_offer_is_refused(options, extra, reason):
    campaign = _campaign("esa", **options)
    annotator, assignment = _taken(campaign)
    answers = _simulated(campaign, assignment, "adequacy") + extra
    if not any("special" in a for a in extra):
        answers += _simulated(campaign, assignment, "fluency")
    with pytest.raises(ValidationError) as caught:
        unit_submit(
            annotator=annotator, assignment_id=assignment.pk, judgements=answers, shown_order=assignment.shown_order
        )
    assert reason in str(caught.value)
    assert not UnitNote.objects.exists()


def test_a_special_answer_and_a_judgement_for_one_criterion_are_refused():
    campaign = _campaign("esa", special_answers=SPECIAL)
    annotator, assignment = _taken(campaign)
    answers = (
        _simulated(campaign, assignment, "adequacy")
        + _simulated(campaign, assignment, "fluency")
        + [{"criterion": "fluency", "special": "[missing]"}]
    )
    with pytest.raises(ValidationError) as caught:
        unit_submit(
            annotator=annotator, assignment_id=assignment.pk, judgements=answers, shown_order=assignment.shown_order
        )
    assert "criterion 'fluency' has a special answer and a judgement" in str(caught.value)


@pytest.mark.parametrize("protocol", ["esa", "mqm", "cesa"])
def test_spans_carry_their_note_where_the_campaign_asks_for_one(protocol):
    campaign = _campaign(protocol, span_text="Why?")
    annotator, assignment = _taken(campaign)
    answers = _simulated(campaign, assignment, "adequacy") + _simulated(campaign, assignment, "fluency")
    with_span = next(a for a in answers if a.get("spans"))
    with_span["spans"][0]["note"] = "wrong <term>"
    unit_submit(
        annotator=annotator, assignment_id=assignment.pk, judgements=answers, shown_order=assignment.shown_order
    )
    from annotations.models import ErrorSpan

    assert ErrorSpan.objects.filter(judgement__campaign=campaign, note="wrong <term>").count() == 1


def test_a_span_note_is_refused_where_the_campaign_asks_for_none():
    campaign = _campaign("esa")
    annotator, assignment = _taken(campaign)
    answers = _simulated(campaign, assignment, "adequacy") + _simulated(campaign, assignment, "fluency")
    next(a for a in answers if a.get("spans"))["spans"][0]["note"] = "x"
    with pytest.raises(ValidationError) as caught:
        unit_submit(
            annotator=annotator, assignment_id=assignment.pk, judgements=answers, shown_order=assignment.shown_order
        )
    assert "this campaign has no free-text field per span" in str(caught.value)
