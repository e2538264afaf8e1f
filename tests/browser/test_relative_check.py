"""A cESA screen that is a relative attention check (issue 41 part 5), in Debian's Chromium at 390 px
with the keyboard only: the screen looks like any other (three output cards, no system name, no mark
of the damage), passes axe, and the scores typed with the keyboard — the degraded copy lowest — are
stored as the check's answer, which passes."""

import pytest

from annotations.models import Membership, Output, Unit
from annotations.models.quality import ControlJudgement, ControlUnit
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
from tests.browser.conftest import log_in, next_screen, open_unit
from tests.browser.test_accessibility import assert_accessible, audited_page, axe_script  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SYSTEMS = ("SECRETSYS-A", "SECRETSYS-B", "SECRETSYS-C")


def _pending_check(campaign, annotator):
    """Hand out units (answering the regular ones) until a relative check is pending."""
    for _ in range(12):
        assignment, _ = assignment_next(campaign=campaign, annotator=annotator)
        if assignment.unit.kind == Unit.Kind.RELATIVE:
            return assignment
        answers = [
            {"criterion": "quality", "output": o, "score": 50 + p, "spans": []}
            for p, o in enumerate(assignment.shown_order)
        ]
        unit_submit(
            annotator=annotator, assignment_id=assignment.pk, judgements=answers, shown_order=assignment.shown_order
        )
    raise AssertionError("no relative check came")


def test_a_cesa_relative_check_with_the_keyboard_at_390px(audited_page, axe_script, live_server):  # noqa: F811
    dataset = DatasetFactory(name="relative-checks")
    systems = [SystemFactory(dataset=dataset, name=name) for name in SYSTEMS]
    for i in range(6):
        item = ItemFactory(dataset=dataset, position=i, external_id=f"r-{i}", source=f"Quelle {i}.")
        for s, system in enumerate(systems):
            OutputFactory(
                item=item,
                system=system,
                text=f"Output {i}.{s}: the new bridge over the river opens to traffic next spring.",
            )
    user = UserFactory(username="ann")
    MembershipFactory(project=dataset.project, user=user, role=Membership.Role.ANNOTATOR)
    campaign = campaign_create(
        dataset=dataset,
        name="Relative",
        protocol="cesa",
        criteria=["quality"],
        redundancy=1,
        seed=2,
        units_per_batch=2,
        options={"tuple_size": 3, "relative_checks": 0.5},
    )
    annotator = annotator_get_or_create(project=campaign.project, name="ann", user=user)
    assignment = _pending_check(campaign, annotator)
    control = ControlUnit.objects.get(unit_id=assignment.unit_id)

    page = audited_page(390)
    log_in(page, "ann", "pw-123456")
    open_unit(page, campaign.pk)
    page.locator("body[data-unit-ready='1']").wait_for()
    assert page.locator("body").get_attribute("data-assignment") == str(assignment.pk)
    cards = page.locator("[data-span-card]")
    assert cards.count() == 3
    handles = [cards.nth(p).get_attribute("data-output") for p in range(3)]
    assert handles == [output_handle(assignment.pk, o) for o in assignment.shown_order]
    texts = {int(a): e["text"] for a, e in control.aliases.items()}
    for p, alias in enumerate(assignment.shown_order):
        assert cards.nth(p).locator("[data-esa-text]").inner_text() == texts[alias]
    html = page.content()
    assert not any(name in html for name in SYSTEMS) and "degraded" not in html and "shuffle5" not in html
    # The copy's original is on the screen, clean.
    degraded = control.degraded_alias
    original = Output.objects.get(pk=control.real_output(degraded)).text
    assert original in [texts[a] for a in assignment.shown_order if a != degraded]
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert_accessible(page, axe_script, "a cESA relative check at 390 px")

    # Keyboard only: each output's score from its text ("s" to the slider, "t" back), the copy lowest.
    position = assignment.shown_order.index(degraded)
    for p in range(3):
        page.keyboard.press("s")
        for _ in range(2 if p == position else 8):
            page.keyboard.press("PageUp")
        page.keyboard.press("t")
        if p < 2:
            page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    # The copy's low score with no error marked: warned, not blocked, naming its output.
    page.locator("#esa-warning").wait_for(state="visible")
    assert page.locator("#esa-warning-outputs").inner_text() == str(position + 1)
    with next_screen(page):
        page.keyboard.press("Enter")
    (cj,) = ControlJudgement.objects.filter(assignment=assignment)
    scores = {int(a): s for a, s in cj.answer["scores"].items()}
    assert scores[degraded] == 20 and all(s == 80 for a, s in scores.items() if a != degraded)
    assert cj.kind == "relative" and cj.passed is True
