"""Revising a unit in Debian's Chromium gives back the special answer and the comment given (stop
48's leftover of issue 41 part 3): the page's fields hold them, and saving again updates them."""

import pytest

from annotations.models import Membership, UnitNote
from annotations.services.assignments import assignment_next
from annotations.services.campaigns import campaign_create
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
from tests.browser.conftest import log_in, next_screen

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_revise_page_restores_the_special_answer_and_the_comment(new_page, live_server):
    dataset = DatasetFactory(name="revise-notes")
    system = SystemFactory(dataset=dataset, name="SECRETSYS-R")
    for i in range(3):
        item = ItemFactory(dataset=dataset, position=i, external_id=f"n-{i}", source=f"Input {i}.")
        OutputFactory(item=item, system=system, text=f"Output {i} reads well.")
    user = UserFactory(username="ann")
    MembershipFactory(project=dataset.project, user=user, role=Membership.Role.ANNOTATOR)
    campaign = campaign_create(
        dataset=dataset,
        name="Revise notes",
        protocol="likert",
        criteria=["fluency", "adequacy"],
        scale_min=1,
        scale_max=5,
        redundancy=1,
        units_per_batch=3,
        options={"special_answers": ["[missing]", "cannot judge"], "unit_text": "Comment"},
    )
    me = annotator_get_or_create(project=campaign.project, name="ann", user=user)
    assignment, _ = assignment_next(campaign=campaign, annotator=me)
    (output,) = assignment.shown_order
    unit_submit(
        annotator=me,
        assignment_id=assignment.pk,
        shown_order=assignment.shown_order,
        judgements=[
            {"criterion": "fluency", "output": output, "score": 4},
            {"criterion": "adequacy", "special": "cannot judge"},
            {"comment": "Source <b>cut</b> off"},
        ],
    )
    page = new_page(viewport={"width": 390, "height": 844})
    log_in(page, "ann", "pw-123456")
    page.goto(f"/annotate/assignments/{assignment.pk}/revise/")
    page.locator("body[data-unit-ready='1']").wait_for()
    assert page.locator("#special-1").input_value() == "cannot judge"
    assert page.locator("#special-0").input_value() == ""
    assert page.locator("#unit-text").input_value() == "Source <b>cut</b> off"
    page.locator("#unit-text").fill("Source cut off at the end")
    with next_screen(page):
        page.get_by_role("button", name="Save changes").click()
    notes = sorted((n.criterion, n.special, n.text) for n in UnitNote.objects.filter(campaign=campaign))
    assert notes == [("", "", "Source cut off at the end"), ("adequacy", "cannot judge", "")]
