"""Special answers and comments on revise and on control units (issue 41 part 3, stop 48's
leftovers): a revised unit's page gives back the special answer and the comment the annotator
gave, saving again keeps or updates them, and a control unit's notes are stored like a regular
unit's."""

import json
import random

import pytest
from django.urls import reverse

from annotations import protocols
from annotations.models import Membership, Output, Unit, UnitNote
from annotations.models.quality import ControlJudgement, ControlUnit
from annotations.quality.services import quality_settings_update
from annotations.services.assignments import assignment_next
from annotations.services.campaigns import campaign_create
from annotations.services.handles import output_handle
from annotations.services.projects import annotator_get_or_create
from annotations.services.submissions import unit_submit
from tests.annotations.factories import (
    DatasetFactory,
    ItemFactory,
    MembershipFactory,
    OutputFactory,
    SystemFactory,
    UserFactory,
)
from tests.protocol_plugin import campaign_settings, every_protocol

pytestmark = pytest.mark.django_db
SPECIAL = ["[missing]", "[instructions fault]", "cannot judge"]


def _campaign(protocol, *, items=3, **options):
    dataset = DatasetFactory()
    systems = [SystemFactory(dataset=dataset, name=f"sys{i}") for i in range(4)]
    for i in range(items):
        item = ItemFactory(dataset=dataset, position=i, external_id=f"i{i}", source=f"Source sentence {i} here.")
        for system in systems:
            OutputFactory(item=item, system=system, text=f"Output {i} of {system.name} reads quite fine today.")
    return campaign_create(
        dataset=dataset,
        name=f"notes-{protocol}",
        protocol=protocol,
        criteria=["adequacy", "fluency"],
        redundancy=1,
        seed=1,
        units_per_batch=10,
        options={"special_answers": SPECIAL, "unit_text": "Comment", **options},
        **campaign_settings(protocol),
    )


def _simulated(campaign, assignment, criterion, texts=None):
    if texts is None:
        texts = {o.pk: o.text for o in Output.objects.filter(pk__in=assignment.shown_order)}
    shown = [{"id": pk, "text": texts[pk]} for pk in assignment.shown_order]
    return protocols.of(campaign).simulated_answers(campaign, criterion, shown, lambda o: 60.0, random.Random(2))


def _draft(page: str) -> dict:
    return json.loads(page.split('id="unit-config" type="application/json">')[1].split("</script>")[0])["draft"]


@pytest.mark.parametrize("protocol", every_protocol())
def test_revise_gives_back_the_special_answer_and_the_comment_and_saving_again_updates_them(
    protocol, registered, client
):
    campaign = _campaign(protocol)
    user = UserFactory(username="reviser")
    MembershipFactory(project=campaign.project, user=user, role=Membership.Role.ANNOTATOR)
    me = annotator_get_or_create(project=campaign.project, name=user.username, user=user)
    assignment, _ = assignment_next(campaign=campaign, annotator=me)
    answers = _simulated(campaign, assignment, "adequacy") + [
        {"criterion": "fluency", "special": "[missing]"},
        {"comment": "The source is cut <short>"},
    ]
    unit_submit(annotator=me, assignment_id=assignment.pk, judgements=answers, shown_order=assignment.shown_order)

    client.force_login(user)
    draft = _draft(client.get(reverse("annotate-revise", args=[assignment.pk])).content.decode())
    # criterion 1 (fluency) is the page's `special-1` select; the comment is `unit-text`
    assert draft["fields"]["special-1"] == "[missing]"
    assert draft["fields"]["unit-text"] == "The source is cut <short>"
    assert "special-0" not in draft["fields"]

    # Saved again as the page sends it: the special answer kept, the comment changed.
    handles = [output_handle(assignment.pk, i) for i in assignment.shown_order]
    texts = {h: Output.objects.get(pk=real).text for h, real in zip(handles, assignment.shown_order)}
    assignment.shown_order = handles
    revised = _simulated(campaign, assignment, "adequacy", texts) + [
        {"criterion": "fluency", "special": "[missing]"},
        {"comment": "The source is cut off"},
    ]
    response = client.post(
        reverse("annotate-revise-submit", args=[assignment.pk]),
        json.dumps({"judgements": revised}),
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    notes = {(n.criterion, n.special, n.text) for n in UnitNote.objects.filter(campaign=campaign)}
    assert notes == {("fluency", "[missing]", ""), ("", "", "The source is cut off")}
    draft = _draft(client.get(reverse("annotate-revise", args=[assignment.pk])).content.decode())
    assert draft["fields"]["unit-text"] == "The source is cut off"


def test_a_revision_without_the_special_answer_drops_it_and_judges_the_criterion(client):
    campaign = _campaign("esa")
    user = UserFactory(username="reviser2")
    MembershipFactory(project=campaign.project, user=user, role=Membership.Role.ANNOTATOR)
    me = annotator_get_or_create(project=campaign.project, name=user.username, user=user)
    assignment, _ = assignment_next(campaign=campaign, annotator=me)
    answers = _simulated(campaign, assignment, "adequacy") + [{"criterion": "fluency", "special": "cannot judge"}]
    unit_submit(annotator=me, assignment_id=assignment.pk, judgements=answers, shown_order=assignment.shown_order)
    client.force_login(user)
    handles = [output_handle(assignment.pk, i) for i in assignment.shown_order]
    texts = {h: Output.objects.get(pk=real).text for h, real in zip(handles, assignment.shown_order)}
    shown = assignment.shown_order
    assignment.shown_order = handles
    revised = _simulated(campaign, assignment, "adequacy", texts) + _simulated(campaign, assignment, "fluency", texts)
    response = client.post(
        reverse("annotate-revise-submit", args=[assignment.pk]),
        json.dumps({"judgements": revised}),
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    assert not UnitNote.objects.filter(campaign=campaign).exists()
    model = protocols.of(campaign).model
    assert model.objects.filter(campaign=campaign, criterion="fluency", output_id__in=shown).count() == 1


@pytest.mark.parametrize("protocol", ["esa", "cesa", "rankme", "pairwise"])
def test_a_control_units_special_answer_and_comment_are_stored(protocol):
    campaign = _campaign(protocol, items=12)
    quality_settings_update(campaign=campaign, degraded_share=0.5, repeat_share=0.0, degrade_kinds=["shuffle"])
    me = annotator_get_or_create(project=campaign.project, name="ctl")
    for _ in range(30):
        assignment, _ = assignment_next(campaign=campaign, annotator=me)
        assert assignment is not None, "no control unit came"
        control = assignment.unit.kind != Unit.Kind.REGULAR
        if control:
            aliases = ControlUnit.objects.get(unit_id=assignment.unit_id).aliases
            texts = {int(a): e["text"] for a, e in aliases.items()}
        else:
            texts = None
        answers = _simulated(campaign, assignment, "adequacy", texts)
        if control:
            answers += [{"criterion": "fluency", "special": "[instructions fault]"}, {"comment": "odd one"}]
        else:
            answers += _simulated(campaign, assignment, "fluency", texts)
        unit_submit(annotator=me, assignment_id=assignment.pk, judgements=answers, shown_order=assignment.shown_order)
        if control:
            break
    notes = UnitNote.objects.filter(campaign=campaign, assignment=assignment)
    assert {(n.criterion, n.special, n.text) for n in notes} == {
        ("fluency", "[instructions fault]", ""),
        ("", "", "odd one"),
    }
    assert all(n.outputs == sorted(assignment.unit.outputs) for n in notes)
    # the control's own answer is there for the criterion judged, none for the one answered specially
    assert set(ControlJudgement.objects.filter(assignment=assignment).values_list("criterion", flat=True)) == {
        "adequacy"
    }
