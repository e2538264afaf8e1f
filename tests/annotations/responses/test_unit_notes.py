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


def _work(campaign, n_units=4):
    """Units answered by two annotators: the odd ones with a special answer for fluency, every one
    with a comment."""
    annotators = [AnnotatorFactory(project=campaign.dataset.project) for _ in range(2)]
    done = 0
    for i in range(n_units):
        annotator = annotators[i % 2]
        assignment, _ = assignment_next(campaign=campaign, annotator=annotator)
        if assignment is None:
            break
        done += 1
        answers = _simulated(campaign, assignment, "adequacy")
        if i % 2:
            answers.append({"criterion": "fluency", "special": "[instructions fault]"})
        else:
            answers += _simulated(campaign, assignment, "fluency")
        answers.append({"comment": f"unit {i}: «odd» <text>"})
        unit_submit(
            annotator=annotator, assignment_id=assignment.pk, judgements=answers, shown_order=assignment.shown_order
        )
    assert done >= 2
    return done // 2, done  # special answers, comments


def _notes_by_systems(campaign, names=None):
    system_of = {o.pk: o.system.name for o in Output.objects.select_related("system")}
    return sorted(
        (
            (names or {}).get(n.annotator.name, n.annotator.name),
            n.item.external_id,
            tuple(sorted(system_of[o] for o in n.outputs)),
            n.criterion,
            n.special,
            n.text,
        )
        for n in UnitNote.objects.filter(campaign=campaign).select_related("annotator", "item")
    )


@pytest.mark.parametrize("protocol", every_protocol())
def test_notes_are_counted_exported_and_imported_back(protocol, registered, tmp_path, client, researcher):
    import io
    import json

    from django.core.management import call_command

    from annotations.models import Membership
    from annotations.services.imports import judgements_import
    from tests.annotations.factories import MembershipFactory

    campaign = _campaign(protocol, special_answers=SPECIAL, unit_text="Comment")
    n_special, n_comments = _work(campaign)

    # The progress page counts each special answer offered, and the commented units.
    MembershipFactory(project=campaign.dataset.project, user=researcher, role=Membership.Role.RESEARCHER)
    client.force_login(researcher)
    progress = client.get(f"/campaigns/{campaign.pk}/progress.json").json()
    assert progress["notes"] == {
        "special": [
            {"answer": "[missing]", "count": 0},
            {"answer": "[instructions fault]", "count": n_special},
            {"answer": "cannot judge", "count": 0},
        ],
        "comments": n_comments,
    }
    page = client.get(f"/campaigns/{campaign.pk}/").content.decode()
    assert "answered “[instructions fault]” (not counted in scores)" in page

    out = io.StringIO()
    call_command("export_dataset", "--campaign", campaign.name, "--out", str(tmp_path), "--json", stdout=out)
    assert json.loads(out.getvalue())["notes"] == n_special + n_comments
    lines = [json.loads(line) for line in (tmp_path / "judgements.jsonl").read_text().splitlines()]
    specials = [line for line in lines if "special" in line]
    comments = [line for line in lines if "comment" in line]
    assert len(specials) == n_special and {line["special"] for line in specials} == {"[instructions fault]"}
    assert all(line["criterion"] == "fluency" and line["systems"] for line in specials)
    assert sorted(line["comment"] for line in comments) == [f"unit {i}: «odd» <text>" for i in range(n_comments)]
    # No judgement line for the specially answered criterion of those units.
    special_units = {(line["item"], tuple(line["systems"]), line["annotator"]) for line in specials}
    assert special_units
    card = (tmp_path / "README.md").read_text()
    assert f"| (in `judgements.jsonl`) | {n_special + n_comments} | special answers and comments" in card

    # import_judgements reads the whole file back into a fresh campaign: the same notes.
    target = campaign_create(
        dataset=campaign.dataset,
        name=f"again-{protocol}",
        protocol=protocol,
        criteria=["adequacy", "fluency"],
        redundancy=1,
        seed=1,
        options={"special_answers": SPECIAL, "unit_text": "Comment"},
        **campaign_settings(protocol),
    )
    raw = (tmp_path / "judgements.jsonl").read_bytes()
    judgements_import(stream=io.BytesIO(raw), campaign_name=target.name)
    pseudonyms = {line["annotator"] for line in lines}
    assert {
        n.annotator.name for n in UnitNote.objects.filter(campaign=target).select_related("annotator")
    } == pseudonyms
    original = [row[1:] for row in _notes_by_systems(campaign)]
    assert sorted(row[1:] for row in _notes_by_systems(target)) == sorted(original)
    # Importing it again changes nothing.
    again = judgements_import(stream=io.BytesIO(raw), campaign_name=target.name)
    assert again.unchanged


def test_a_note_line_the_campaign_does_not_offer_is_a_line_error():
    import io
    import json

    from annotations.services.imports import judgements_import
    from annotations.services.imports.errors import ImportFailed

    campaign = _campaign("esa", special_answers=["[missing]"])
    output = Output.objects.filter(item__dataset=campaign.dataset).select_related("item", "system").first()
    line = {"item": output.item.external_id, "systems": [output.system.name], "annotator": "w1"}
    bad = [
        {**line, "criterion": "fluency", "special": "n/a"},
        {**line, "comment": "hello"},
        {**line, "systems": ["nope"], "criterion": "fluency", "special": "[missing]"},
    ]
    raw = "\n".join(json.dumps(b) for b in bad).encode()
    with pytest.raises(ImportFailed) as caught:
        judgements_import(stream=io.BytesIO(raw), campaign_name=campaign.name)
    text = str([str(e) for e in caught.value.errors])
    assert "'n/a' is not one of [missing]" in text
    assert "this campaign has no free-text field" in text
    assert "unknown system 'nope'" in text
    assert not UnitNote.objects.exists()
