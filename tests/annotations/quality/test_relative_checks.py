"""Relative attention checks (issue 41 part 5, WMT 2026's design): on a screen of several outputs one
is a degraded copy of another output of the same source; the check passes when the copy scores below
every clean output (pairwise: the clean one preferred; best-worst: the copy chosen as worst).
Protocols that declare the capability take the option; the others refuse it with a clear error.
Answers go through the real submit path; the verdicts feed the annotator's figures and the export."""

import json

import pytest
from django.core.exceptions import ValidationError

from annotations import protocols
from annotations.export.service import ExportOptions, export_dataset
from annotations.models import Output, Unit
from annotations.models.quality import ControlJudgement, ControlUnit
from annotations.protocols.common_options import RELATIVE_DAMAGE_KINDS
from annotations.quality import degrade
from annotations.quality.selectors import campaign_quality
from annotations.services.assignments import assignment_next
from annotations.services.campaigns import campaign_create
from annotations.services.handles import output_handle
from annotations.services.projects import annotator_get_or_create
from annotations.services.submissions import unit_submit
from tests.annotations.factories import DatasetFactory, ItemFactory, OutputFactory, SystemFactory
from tests.protocol_plugin import campaign_settings, every_protocol

pytestmark = pytest.mark.django_db

WORDS = "the committee approved a new budget for public schools and local hospitals after a long debate"


def _supporting() -> list[str]:
    """The registered protocols (the test-only plugin included) that declare relative checks."""
    from django.utils.module_loading import import_string

    from tests.protocol_plugin import WITH_PLUGIN

    return [import_string(path).name for path in WITH_PLUGIN if import_string(path).relative_checks]


def _dataset(items=8, systems=4):
    dataset = DatasetFactory()
    made = [SystemFactory(dataset=dataset, name=f"SECRET-{i}") for i in range(systems)]
    for i in range(items):
        item = ItemFactory(dataset=dataset, position=i, external_id=f"doc-{i}", source=f"Quelle {i}.")
        for s, system in enumerate(made):
            words = WORDS.split()
            words[s], words[-1 - s] = words[-1 - s], words[s]  # four distinct outputs of one source
            OutputFactory(item=item, system=system, text=f"In {i}, " + " ".join(words) + ".")
    return dataset


def _campaign(protocol, **options):
    return campaign_create(
        dataset=_dataset(),
        name=f"rel-{protocol}",
        protocol=protocol,
        criteria=["quality"],
        redundancy=1,
        seed=3,
        units_per_batch=4,
        options={"relative_checks": 0.5, **options},
        **campaign_settings(protocol),
    )


def test_the_damage_kinds_declared_for_the_option_are_the_degraders():
    assert set(RELATIVE_DAMAGE_KINDS) == set(degrade.KINDS)


def test_five_words_are_shuffled_by_default():
    text = "Alpha beta gamma delta epsilon zeta eta theta iota kappa."
    damaged = degrade.degrade(text, kind="shuffle5", seed=4)
    before, after = text.rstrip(".").split(), damaged.text.rstrip(".").split()
    assert sorted(w.lower() for w in before) == sorted(w.lower() for w in after)
    assert sum(a.lower() != b.lower() for a, b in zip(before, after)) == 5
    assert after[0][0].isupper()  # the sentence still starts with a capital


@pytest.mark.parametrize("protocol", every_protocol())
def test_protocols_that_do_not_declare_relative_checks_refuse_the_option(protocol, registered):
    if protocols.get(protocol).relative_checks:
        campaign = _campaign(protocol)
        assert protocols.of(campaign).option(campaign, "relative_checks") == 0.5
        assert protocols.of(campaign).option(campaign, "relative_damage") == ["shuffle5"]
        return
    with pytest.raises(ValidationError) as caught:
        _campaign(protocol)
    message = str(caught.value)
    assert "options.relative_checks: relative attention checks need several outputs on a screen" in message
    assert f"{protocol} campaigns show one" in message
    assert "cesa" in message and "pairwise" in message


def _next_relative(campaign, annotator, answer_regular):
    """Units handed to `annotator` until a relative check comes (the regular ones answered)."""
    for _ in range(20):
        assignment, _ = assignment_next(campaign=campaign, annotator=annotator)
        assert assignment is not None, "no relative check came"
        if assignment.unit.kind == Unit.Kind.RELATIVE:
            return assignment
        assert assignment.unit.kind == Unit.Kind.REGULAR
        answer_regular(assignment)
    raise AssertionError("no relative check in 20 units")


def _answers(campaign, assignment, texts, impression):
    shown = [{"id": pk, "text": texts[pk]} for pk in assignment.shown_order]
    import random

    return protocols.of(campaign).simulated_answers(campaign, "quality", shown, impression, random.Random(1))


@pytest.mark.parametrize("passes", [True, False], ids=["passed", "failed"])
@pytest.mark.parametrize("protocol", _supporting())
def test_a_relative_check_passes_when_the_copy_scores_below_every_clean_output(protocol, passes):
    campaign = _campaign(protocol)
    annotator = annotator_get_or_create(project=campaign.project, name="ann")

    def regular(assignment):
        texts = dict(Output.objects.filter(pk__in=assignment.shown_order).values_list("id", "text"))
        answers = _answers(campaign, assignment, texts, lambda o: 50 + 10 * assignment.shown_order.index(o["id"]))
        unit_submit(
            annotator=annotator, assignment_id=assignment.pk, judgements=answers, shown_order=assignment.shown_order
        )

    assignment = _next_relative(campaign, annotator, regular)
    control = ControlUnit.objects.get(unit_id=assignment.unit_id)
    assert control.kind == "relative"
    degraded = control.degraded_alias
    # The copy is of another output of the same source: one the screen does not show when the campaign
    # has one (tuples or pairs of fewer than the 4 systems), else one of the screen's own (tuples of
    # all 4), shown clean beside it.
    original = control.real_output(degraded)
    clean = {control.real_output(int(a)) for a, e in control.aliases.items() if "degraded" not in e}
    pool = {
        o
        for outputs in Unit.objects.filter(item_id=control.unit.item_id, kind="regular").values_list(
            "outputs", flat=True
        )
        for o in outputs
    }
    assert original in pool and Output.objects.get(pk=original).item_id == control.unit.item_id
    if pool - set(control.source.outputs):
        assert original not in clean and original not in control.source.outputs
        assert len(set(assignment.unit.systems)) == len(assignment.unit.systems)  # each system once
    else:
        assert original in clean
    assert control.aliases[str(degraded)]["degraded"]["kind"] == "shuffle5"
    assert control.aliases[str(degraded)]["text"] != Output.objects.get(pk=original).text
    # The screen is a regular screen of that source: no item the annotator saw before.
    assert len(assignment.shown_order) == len(control.source.outputs)

    texts = {int(a): e["text"] for a, e in control.aliases.items()}
    low, high = (5, 95) if passes else (95, 5)
    clean_scores = iter([60, 70, 80, 90, 85])
    values = {a: (low if a == degraded else (next(clean_scores) if passes else 10 + a % 3)) for a in texts}
    answers = _answers(campaign, assignment, texts, lambda o: values[o["id"]])
    unit_submit(
        annotator=annotator, assignment_id=assignment.pk, judgements=answers, shown_order=assignment.shown_order
    )
    (cj,) = ControlJudgement.objects.filter(assignment=assignment)
    assert cj.kind == "relative" and cj.passed is passes
    # No judgement row for the check: scores and agreement never see it.
    assert not protocols.of(campaign).model.objects.filter(assignment=assignment).exists()
    figures = campaign_quality(campaign=campaign)[annotator.pk].as_json()
    assert figures["relative"] == {"judged": 1, "passed": int(passes)}
    assert figures["controls_passed"] == (1.0 if passes else 0.0)


def test_a_relative_check_looks_like_a_regular_screen_through_the_api(client):
    """Same keys and shape as a regular unit's response, no system name, no mark of damage."""
    from rest_framework.test import APIClient

    from annotations.models import Membership
    from tests.annotations.factories import MembershipFactory, UserFactory

    campaign = _campaign("cesa")
    user = UserFactory(username="looker")
    MembershipFactory(project=campaign.project, user=user, role=Membership.Role.ANNOTATOR)
    api = APIClient()
    api.force_authenticate(user)
    shapes = {}
    for _ in range(12):
        response = api.post(f"/api/campaigns/{campaign.pk}/next-assignment/")
        if response.status_code == 204:
            break
        body = response.json()
        unit = Unit.objects.get(assignments__pk=body["id"])
        shapes.setdefault(unit.kind, body)
        text = json.dumps(body)
        assert not any(word in text for word in ("SECRET", "degraded", "shuffle5", "relative")), body
        answers = [
            {"criterion": "quality", "output": o["id"], "score": 50 + i, "spans": []}
            for i, o in enumerate(body["item"]["outputs"])
        ]
        sent = api.post(f"/api/assignments/{body['id']}/submit/", {"judgements": answers}, format="json")
        assert sent.status_code in (200, 201), sent.json()
    assert {"regular", "relative"} <= set(shapes)

    def keys(value):
        if isinstance(value, dict):
            return {k: keys(v) for k, v in value.items()}
        if isinstance(value, list):
            return [keys(v) for v in value[:1]]
        return type(value).__name__

    assert keys(shapes["relative"]) == keys(shapes["regular"])


def test_relative_checks_are_in_the_export_and_the_card(tmp_path):
    campaign = _campaign("bws")
    annotator = annotator_get_or_create(project=campaign.project, name="exported")

    def regular(assignment):
        texts = dict(Output.objects.filter(pk__in=assignment.shown_order).values_list("id", "text"))
        answers = _answers(campaign, assignment, texts, lambda o: 50 + 10 * assignment.shown_order.index(o["id"]))
        unit_submit(
            annotator=annotator, assignment_id=assignment.pk, judgements=answers, shown_order=assignment.shown_order
        )

    assignment = _next_relative(campaign, annotator, regular)
    control = ControlUnit.objects.get(unit_id=assignment.unit_id)
    texts = {int(a): e["text"] for a, e in control.aliases.items()}
    answers = _answers(
        campaign, assignment, texts, lambda o: 0 if o["id"] == control.degraded_alias else 50 + o["id"] % 7
    )
    unit_submit(
        annotator=annotator, assignment_id=assignment.pk, judgements=answers, shown_order=assignment.shown_order
    )
    export_dataset(campaign=campaign, out=tmp_path / "out", options=ExportOptions(annotator_figures=True))
    (row,) = [json.loads(line) for line in (tmp_path / "out" / "annotators.jsonl").read_text().splitlines()]
    assert row["relative_judged"] == 1 and row["relative_passed"] == 1
    campaign_json = json.loads((tmp_path / "out" / "campaign.json").read_text())
    assert campaign_json["options"]["relative_checks"] == 0.5
    card = (tmp_path / "out" / "README.md").read_text()
    assert "Relative attention checks" in card and "50% of each batch" in card


def test_the_option_through_create_campaign_and_campaign_json(tmp_path):
    """`--option relative_checks=...` for a multi-output protocol, refused with its reason for ESA, and
    a campaign.json export that creates the same campaign again."""
    from io import StringIO

    from django.core.management import call_command
    from django.core.management.base import CommandError

    from annotations.models import Campaign

    dataset = _dataset(items=3, systems=3)

    def run(*args):
        out = StringIO()
        call_command(*args, "--json", stdout=out, stderr=StringIO())
        return json.loads(out.getvalue())

    base = ("create_campaign", "--dataset", dataset.name, "--criteria", "quality")
    made = run(*base, "--name", "c", "--protocol", "cesa", "--option", "relative_checks=0.2")
    assert made["options"]["relative_checks"] == 0.2 and made["options"]["relative_damage"] == ["shuffle5"]
    err = StringIO()
    with pytest.raises(CommandError):
        call_command(
            *base, "--name", "e", "--protocol", "esa", "--option", "relative_checks=0.2", stdout=StringIO(), stderr=err
        )
    assert "relative attention checks need several outputs on a screen; esa campaigns show one" in err.getvalue()
    out = tmp_path / "export"
    call_command("export_dataset", "--campaign", "c", "--format", "jsonl", "--out", str(out), stdout=StringIO())
    again = run("create_campaign", "--from", str(out / "campaign.json"), "--name", "c2")
    assert again["options"]["relative_checks"] == 0.2
    assert Campaign.objects.get(name="c2").options["relative_checks"] == 0.2


@pytest.mark.parametrize("passes", [True, False], ids=["passed", "failed"])
def test_a_relative_check_answered_one_judgement_at_a_time(passes):
    """The single-judgement endpoint (`POST /api/judgements/spans/`, one cESA output at a time): the
    verdict is set once every output of the check is answered."""
    from rest_framework.test import APIClient

    from annotations.models import Membership
    from tests.annotations.factories import MembershipFactory, UserFactory

    campaign = _campaign("cesa")
    user = UserFactory(username="single")
    MembershipFactory(project=campaign.project, user=user, role=Membership.Role.ANNOTATOR)
    api = APIClient()
    api.force_authenticate(user)
    for _ in range(12):
        body = api.post(f"/api/campaigns/{campaign.pk}/next-assignment/").json()
        unit = Unit.objects.get(assignments__pk=body["id"])
        control = ControlUnit.objects.filter(unit=unit).first()
        # The API names outputs by handles (annotations.services.handles).
        degraded = output_handle(body["id"], control.degraded_alias) if control is not None else None
        for i, output in enumerate(body["item"]["outputs"]):
            low = (output["id"] == degraded) == passes
            sent = api.post(
                "/api/judgements/spans/",
                {"campaign": campaign.pk, "output": output["id"], "criterion": "quality", "score": 10 if low else 90},
                format="json",
            )
            assert sent.status_code == 201, sent.content
            if control is not None and i < len(body["item"]["outputs"]) - 1:
                assert ControlJudgement.objects.get(assignment_id=body["id"]).passed is None  # not yet answered
        if control is not None:
            break
    assert control is not None and control.kind == "relative"
    (cj,) = ControlJudgement.objects.filter(control=control)
    assert cj.passed is passes
    assert set(cj.answer["scores"]) == {str(a) for a in unit.outputs}
