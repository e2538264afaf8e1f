"""Quality control in document mode (issue 41, context=document): a control unit is a whole document
unit, the same size and shape as the regular ones, so nothing tells it apart among whole documents.
A relative attention check on cESA degrades one system's copy of the document (five words shuffled
in each segment where that applies); it passes when, in every degraded segment, the copy scores
below every clean output of that segment. Degraded copies and repeats copy a whole document unit;
a gold unit is a whole document, checked in every segment. Answers go through the real submit path."""

import re

import pytest
from django.core.exceptions import ValidationError
from django.db import transaction

from annotations.models import Annotator, Assignment, Enrolment, Output, SpanJudgement, Unit
from annotations.models.quality import ControlJudgement, ControlUnit, QualitySettings
from annotations.protocols.base import document_segments
from annotations.quality.selectors import campaign_quality
from annotations.quality.services.controls import _batch_plan
from annotations.quality.services.gold_units import gold_unit_create
from annotations.quality.services.settings import quality_settings_update
from annotations.selectors.units import assignment_payload
from annotations.services.assignments import assignment_next
from annotations.services.campaigns import campaign_create
from annotations.services.submissions import unit_submit
from tests.annotations.factories import DatasetFactory, ItemFactory, OutputFactory, SystemFactory

pytestmark = pytest.mark.django_db

WORDS = "the council approved a new budget for public schools and local hospitals after a long debate"


def _dataset(systems: int, docs: int = 4, segments: int = 4):
    dataset = DatasetFactory()
    made = [SystemFactory(dataset=dataset, name=f"SECRET-{s}") for s in range(systems)]
    position = 0
    for d in range(docs):
        for k in range(segments):
            item = ItemFactory(
                dataset=dataset,
                position=position,
                external_id=f"d{d}-{k}",
                source=f"Quelle {d}.{k}.",
                doc=f"doc{d}",
                doc_pos=k,
            )
            position += 1
            for s, system in enumerate(made):
                words = WORDS.split()
                words[s], words[-1 - s] = words[-1 - s], words[s]  # distinct outputs of one source
                OutputFactory(item=item, system=system, text=f"In {d}.{k}, " + " ".join(words) + ".")
    return dataset


def _campaign(dataset, protocol="cesa", **options):
    return campaign_create(
        dataset=dataset,
        name=f"doc-controls-{protocol}",
        protocol=protocol,
        criteria=["quality"],
        redundancy=1,
        seed=5,
        units_per_batch=4,
        options={"context": "document", **options},
    )


def _segments(unit: Unit, order=None) -> list[list[int]]:
    order = list(order if order is not None else unit.outputs)
    starts = document_segments(list(unit.systems)) + [len(order)]
    return [order[a:b] for a, b in zip(starts, starts[1:])]


def _submit(annotator, assignment, score_of):
    order = list(assignment.shown_order)
    answers = [{"criterion": "quality", "output": o, "score": score_of(o), "spans": []} for o in order]
    unit_submit(annotator=annotator, assignment_id=assignment.pk, judgements=answers, shown_order=order)


def _next_control(campaign, annotator, kind):
    for _ in range(30):
        assignment, _ = assignment_next(campaign=campaign, annotator=annotator)
        assert assignment is not None, f"no {kind} control came"
        if assignment.unit.kind == kind:
            return assignment
        _submit(annotator, assignment, lambda o: 60.0)
    raise AssertionError(f"no {kind} control in 30 units")


@pytest.mark.parametrize("systems", [6, 3], ids=["off-screen-donor", "on-screen-donor"])
@pytest.mark.parametrize("passes", [True, False], ids=["passed", "failed"])
def test_a_relative_check_is_a_whole_document_unit_judged_segment_by_segment(systems, passes):
    campaign = _campaign(_dataset(systems), tuple_size=3, relative_checks=0.25)
    annotator = Annotator.objects.create(project=campaign.project, name="ann")
    assignment = _next_control(campaign, annotator, Unit.Kind.RELATIVE)
    unit = assignment.unit
    control = ControlUnit.objects.get(unit=unit)
    source = control.source
    # The same size and shape as a regular document unit: the source's segments, its systems in place.
    assert source.kind == Unit.Kind.REGULAR and len(_segments(source)) == 4
    assert len(unit.outputs) == len(source.outputs) == 12
    assert list(unit.systems) == list(source.systems)
    segments = _segments(unit, assignment.shown_order)
    assert [len(s) for s in segments] == [3, 3, 3, 3]
    # (six systems: two screens of three, so a system off the screen gives the copy)
    # One system's copy is degraded, in every segment (five words shuffle in each), always that system.
    degraded = {int(a) for a, e in control.aliases.items() if e.get("degraded")}
    system_of = dict(zip(unit.outputs, unit.systems))
    assert len(degraded) == 4 and len({system_of[a] for a in degraded}) == 1
    assert all(len(degraded & set(s)) == 1 for s in segments)
    for alias in degraded:
        entry = control.aliases[str(alias)]
        real = Output.objects.get(pk=entry["output"])
        assert entry["text"] != real.text
        assert sorted(re.findall(r"\w+", entry["text"].lower())) == sorted(re.findall(r"\w+", real.text.lower()))
        # The copy is of another system's output of the same segment (off the screen when there is one).
        assert real.system_id != system_of[alias]
        assert (real.system_id in set(unit.systems)) == (systems == 3)
    # The page's payload: a document of 4 segments with its sources, like a regular unit's.
    payload = assignment_payload(assignment=assignment)
    assert [s["source"] for s in payload["document"]] == [f"Quelle {source.item.doc[3:]}.{k}." for k in range(4)]
    assert [s["outputs"] for s in payload["document"]] == segments
    texts = {o["id"]: o["text"] for o in payload["item"]["outputs"]}
    assert all(texts[a] == control.aliases[str(a)]["text"] for a in degraded)

    # Copies below every clean output of their segment pass; one segment's copy above a clean one fails.
    wrong = sorted(degraded)[1]

    def score(o):
        if o in degraded:
            return 20.0 if passes or o != wrong else 90.0
        return 70.0 + o % 3

    _submit(annotator, assignment, score)
    (cj,) = ControlJudgement.objects.filter(control=control)
    assert cj.passed is passes
    assert Assignment.objects.get(pk=assignment.pk).status == Assignment.Status.DONE
    # It feeds quality control as a segment-level check does; scores never see it.
    assert not SpanJudgement.objects.filter(assignment=assignment).exists()
    figures = campaign_quality(campaign=campaign)[annotator.pk].as_json()
    assert figures["relative"] == {"judged": 1, "passed": int(passes)}


def test_a_tie_in_one_segment_fails_the_check():
    campaign = _campaign(_dataset(6), tuple_size=3, relative_checks=0.25)
    annotator = Annotator.objects.create(project=campaign.project, name="ann")
    assignment = _next_control(campaign, annotator, Unit.Kind.RELATIVE)
    control = ControlUnit.objects.get(unit=assignment.unit)
    degraded = sorted(int(a) for a, e in control.aliases.items() if e.get("degraded"))
    tied = degraded[-1]
    _submit(annotator, assignment, lambda o: 50.0 if o == tied else 10.0 if o in degraded else 50.0)
    assert ControlJudgement.objects.get(control=control).passed is False


@pytest.mark.parametrize("kind,share", [("degraded", "degraded_share"), ("repeat", "repeat_share")])
def test_degraded_copies_and_repeats_copy_a_whole_document_unit(kind, share):
    campaign = _campaign(_dataset(3, docs=8), protocol="esa")  # ESA: one system's document per unit
    quality_settings_update(campaign=campaign, **{share: 0.25})
    annotator = Annotator.objects.create(project=campaign.project, name="ann")
    assignment = _next_control(campaign, annotator, kind)
    unit = assignment.unit
    control = ControlUnit.objects.get(unit=unit)
    assert len(unit.outputs) == len(control.source.outputs) == 4
    assert list(unit.systems) == list(control.source.systems)
    payload = assignment_payload(assignment=assignment)
    assert len(payload["document"]) == 4 and all(len(s["outputs"]) == 1 for s in payload["document"])
    assert all(s["source"] for s in payload["document"])
    _submit(annotator, assignment, lambda o: 30.0)
    assert ControlJudgement.objects.filter(control=control).count() == 1


@pytest.mark.parametrize("passes", [True, False], ids=["passed", "failed"])
def test_a_gold_unit_is_a_whole_document_checked_in_every_segment(passes):
    """In document mode a gold unit is the whole document of the item named, the outputs of the
    systems named in every segment, laid out as a regular document unit; the expected answer is
    checked in every segment: one segment's output outside it fails the unit (a loud one is sent
    back to try again)."""
    dataset = _dataset(3, docs=2)
    campaign = _campaign(dataset, tuple_size=3)
    middle = dataset.items.get(external_id="d1-2")  # any segment names its document
    gold = gold_unit_create(
        campaign=campaign,
        item=middle,
        outputs=list(middle.outputs.all()),
        expected={"*": {"min": 60}},
        mode="loud",
        explanation="Every segment of this document is a good translation.",
    )
    real = list(Output.objects.filter(pk__in=gold.outputs).select_related("item"))
    assert gold.item.external_id == "d1-0" and len(gold.outputs) == 12
    assert {o.item.external_id for o in real} == {f"d1-{k}" for k in range(4)}
    annotator = Annotator.objects.create(project=campaign.project, name="ann")
    assignment, _ = assignment_next(campaign=campaign, annotator=annotator)  # a loud gold unit comes first
    unit = assignment.unit
    assert unit.kind == Unit.Kind.GOLD
    # The same shape as a regular document unit: four segments of three outputs, with their sources.
    segments = _segments(unit, assignment.shown_order)
    assert [len(s) for s in segments] == [3, 3, 3, 3]
    payload = assignment_payload(assignment=assignment)
    assert [s["source"] for s in payload["document"]] == [f"Quelle 1.{k}." for k in range(4)]
    assert [s["outputs"] for s in payload["document"]] == segments
    low = segments[2][1]  # one output of the third segment

    def score(o):
        return 30.0 if o == low and not passes else 80.0

    order = list(assignment.shown_order)
    answers = [{"criterion": "quality", "output": o, "score": score(o), "spans": []} for o in order]
    result = unit_submit(annotator=annotator, assignment_id=assignment.pk, judgements=answers, shown_order=order)
    (cj,) = ControlJudgement.objects.filter(control__unit=unit)
    assert cj.passed is passes
    assert result.retry is (not passes)
    done = Assignment.objects.get(pk=assignment.pk).status == Assignment.Status.DONE
    assert done is passes
    assert not SpanJudgement.objects.filter(assignment=assignment).exists()


def test_a_gold_unit_in_document_mode_needs_a_whole_document():
    dataset = _dataset(3, docs=1)
    campaign = _campaign(dataset, protocol="esa")  # ESA: one system's document per unit
    item = dataset.items.order_by("position").first()
    # An item outside any document: refused with the reason.
    item.doc, item.doc_pos = "", None
    item.save()
    with pytest.raises(ValidationError) as exc:
        gold_unit_create(campaign=campaign, item=item, outputs=list(item.outputs.all()[:1]), expected={"*": {"min": 1}})
    assert "with context=document a gold unit is a whole document" in str(exc.value)
    # A segment without an output of the system named: refused, naming it.
    other = dataset.items.get(external_id="d0-2")
    system = other.outputs.first().system
    other.outputs.filter(system=system).delete()
    first = dataset.items.get(external_id="d0-1")
    with pytest.raises(ValidationError) as exc:
        gold_unit_create(
            campaign=campaign, item=first, outputs=list(first.outputs.filter(system=system)), expected={"*": {"min": 1}}
        )
    assert f"segment 'd0-2' of document 'doc0' has no output of '{system.name}'" in str(exc.value)


def _api_client(campaign, username):
    from rest_framework.test import APIClient

    from annotations.models import Membership
    from tests.annotations.factories import MembershipFactory, UserFactory

    user = UserFactory(username=username)
    MembershipFactory(project=campaign.project, user=user, role=Membership.Role.ANNOTATOR)
    api = APIClient()
    api.force_authenticate(user)
    return api


def _one(api, campaign, output, score):
    return api.post(
        "/api/judgements/spans/",
        {"campaign": campaign.pk, "output": output, "criterion": "quality", "score": score},
        format="json",
    )


@pytest.mark.parametrize("passes", [True, False], ids=["passed", "failed"])
def test_a_document_check_answered_one_judgement_at_a_time_through_the_api(passes):
    """The partial-answer path of a document-mode relative check (`POST /api/judgements/spans/`, one
    output of one segment at a time, as a client that saves as it goes): no verdict while a degraded
    copy (or any output) is unscored, even once every degraded copy is answered; the draft saved
    midway comes back with the unit; the verdict is set, segment by segment, once the last output is
    answered, and the unit is done (a further answer is refused)."""
    from annotations.services.handles import output_handle

    campaign = _campaign(_dataset(6), tuple_size=3, relative_checks=0.25)
    api = _api_client(campaign, "one-by-one")
    control = None
    regular_items = None
    for _ in range(30):
        body = api.post(f"/api/campaigns/{campaign.pk}/next-assignment/").json()
        unit = Unit.objects.get(assignments__pk=body["id"])
        if unit.kind == Unit.Kind.RELATIVE:
            control = ControlUnit.objects.get(unit=unit)
            break
        if unit.kind == Unit.Kind.REGULAR and regular_items is None:
            # A regular document unit answered the same way: each answer names its segment's item.
            regular_items = []
            for segment in body["document"]:
                for output in segment["outputs"]:
                    sent = _one(api, campaign, output, 60)
                    assert sent.status_code == 201, sent.content
                    regular_items.append(sent.json()["item"])
            assert Assignment.objects.get(pk=body["id"]).status == Assignment.Status.DONE
            assert {j.item_id for j in SpanJudgement.objects.filter(assignment_id=body["id"])} == {
                Output.objects.get(pk=o).item_id for o in unit.outputs
            }
            continue
        answers = [
            {"criterion": "quality", "output": o["id"], "score": 60, "spans": []} for o in body["item"]["outputs"]
        ]
        sent = api.post(f"/api/assignments/{body['id']}/submit/", {"judgements": answers}, format="json")
        assert sent.status_code in (200, 201), sent.content
    assert control is not None, "no relative check in 30 units"
    assert regular_items is not None and len(set(regular_items)) == 4
    assignment_id = body["id"]
    degraded = {output_handle(assignment_id, int(a)) for a, e in control.aliases.items() if e.get("degraded")}
    assert len(degraded) == 4
    segments = [s["outputs"] for s in body["document"]]
    assert len(segments) == 4 and all(len(s) == 3 for s in segments)
    assert {o for s in segments for o in s} == {o["id"] for o in body["item"]["outputs"]}
    wrong = sorted(degraded)[2]

    def score(o):
        if o in degraded:
            return 10 if passes or o != wrong else 95
        return 70

    # The degraded copies first, then the clean outputs: no verdict until the last one.
    order = [o for s in segments for o in s if o in degraded] + [o for s in segments for o in s if o not in degraded]
    items = {}
    for i, output in enumerate(order):
        sent = _one(api, campaign, output, score(output))
        assert sent.status_code == 201, sent.content
        items[output] = sent.json()["item"]
        (cj,) = ControlJudgement.objects.filter(control=control)
        if i < len(order) - 1:
            assert cj.passed is None, f"a verdict after {i + 1} of {len(order)} answers"
            assert Assignment.objects.get(pk=assignment_id).status == Assignment.Status.PENDING
        if i == len(order) // 2:
            draft = {"scores": {o: score(o) for o in order[: i + 1]}}
            saved = api.put(f"/api/assignments/{assignment_id}/draft/", {"draft": draft}, format="json")
            assert saved.status_code == 204, saved.content
            again = api.post(f"/api/campaigns/{campaign.pk}/next-assignment/").json()
            assert again["id"] == assignment_id and again["draft"] == draft
            assert [s["outputs"] for s in again["document"]] == segments
    # As on a regular document unit, an answer names its own segment's item (one per segment).
    assert len({items[o] for o in order}) == 4
    assert all(len({items[o] for o in s}) == 1 for s in segments)
    (cj,) = ControlJudgement.objects.filter(control=control)
    assert cj.passed is passes
    assert set(cj.answer["scores"]) == {str(a) for a in unit.outputs}
    assert Assignment.objects.get(pk=assignment_id).status == Assignment.Status.DONE
    assert _one(api, campaign, order[0], 50).status_code in (400, 409)
    figures = campaign_quality(campaign=campaign)
    assert list(figures.values())[0].as_json()["relative"] == {"judged": 1, "passed": int(passes)}
    assert not SpanJudgement.objects.filter(assignment_id=assignment_id).exists()


@pytest.mark.parametrize("passes", [True, False], ids=["passed", "failed"])
def test_a_gold_document_answered_one_judgement_at_a_time_through_the_api(passes):
    """A loud gold document through `POST /api/judgements/spans/`: no verdict until every segment's
    outputs are answered; then passed (the unit done) or failed (sent back: still pending)."""
    dataset = _dataset(3, docs=2)
    campaign = _campaign(dataset, tuple_size=3)
    item = dataset.items.get(external_id="d0-0")
    gold_unit_create(
        campaign=campaign,
        item=item,
        outputs=list(item.outputs.all()),
        expected={"*": {"min": 60}},
        mode="loud",
        explanation="All good.",
    )
    api = _api_client(campaign, "gold-one-by-one")
    body = api.post(f"/api/campaigns/{campaign.pk}/next-assignment/").json()
    assert Unit.objects.get(assignments__pk=body["id"]).kind == Unit.Kind.GOLD
    order = [o for s in body["document"] for o in s["outputs"]]
    assert len(order) == 12 and len(body["document"]) == 4
    low = body["document"][3]["outputs"][0]  # one output of the last segment
    for i, output in enumerate(order):
        sent = _one(api, campaign, output, 20 if output == low and not passes else 80)
        assert sent.status_code == 201, sent.content
        if i < len(order) - 1:
            assert ControlJudgement.objects.get(assignment_id=body["id"]).passed is None
    assert ControlJudgement.objects.get(assignment_id=body["id"]).passed is passes
    status = Assignment.objects.get(pk=body["id"]).status
    assert status == (Assignment.Status.DONE if passes else Assignment.Status.PENDING)


def _shape(value):
    """What a payload says apart from its texts and ids: its keys, list lengths and kinds of value."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(v) for v in value]
    return type(value).__name__


@pytest.mark.parametrize("passes", [True, False], ids=["passed", "failed"])
def test_a_silent_gold_document_comes_at_its_planned_slot_unmarked_and_scored(passes):
    """A silent gold document (context=document) is handed out inside the annotator's batch at the
    slot their batch plan draws for it (from their seed), never at another; the annotator is shown a
    document unit with the same fields as a regular one (nothing says gold, no explanation); it is
    scored in every segment: one segment's output outside the expected answer fails it, and, silent,
    it is not sent back (the unit is done either way)."""
    dataset = _dataset(3, docs=8)
    campaign = _campaign(dataset, tuple_size=3)  # cESA: a document's three systems in each unit
    size = campaign.units_per_batch
    annotator = Annotator.objects.create(project=campaign.project, name="ann")
    first, _ = assignment_next(campaign=campaign, annotator=annotator)  # slot 0 of batch 0: never a control
    regular = assignment_payload(assignment=first)  # a regular document unit as handed out
    _submit(annotator, first, lambda o: 60.0)
    # A silent gold unit goes only to an annotator who has seen nothing of its item: the gold document
    # is one that the rest of this batch would not show them (a rehearsal, rolled back).
    seen = {first.unit.item.doc}
    with transaction.atomic():
        for _ in range(size - 1):
            ahead, _ = assignment_next(campaign=campaign, annotator=annotator)
            seen.add(ahead.unit.item.doc)
            _submit(annotator, ahead, lambda o: 60.0)
        transaction.set_rollback(True)
    doc = next(f"doc{d}" for d in range(8) if f"doc{d}" not in seen)
    gold_item = dataset.items.get(doc=doc, doc_pos=0)
    gold_unit_create(
        campaign=campaign,
        item=gold_item,
        outputs=list(gold_item.outputs.all()),
        expected={"*": {"min": 60}},
        mode="silent",
        explanation="EXPLAINED: every segment is fine.",
    )
    enrolment = Enrolment.objects.get(campaign=campaign, annotator=annotator)
    plan = _batch_plan(
        campaign=campaign, qs=QualitySettings(campaign=campaign), enrolment=enrolment, batch=0, silent_gold_left=1
    )
    ((slot, kind),) = plan
    assert kind == "gold" and 1 <= slot < size

    # The rest of the batch: the gold document at its slot, regular units at every other.
    handed, shown = [], None
    for seq in range(1, size):
        assignment, _ = assignment_next(campaign=campaign, annotator=annotator)
        assert assignment.seq == seq
        handed.append(assignment)
        if assignment.unit.kind != Unit.Kind.GOLD:
            _submit(annotator, assignment, lambda o: 60.0)
            continue
        gold, shown = assignment, assignment_payload(assignment=assignment)
        low = _segments(gold.unit, gold.shown_order)[3][1]  # one output of the last segment
        # Scored in every segment: that one output below the expected minimum fails it.
        _submit(annotator, gold, lambda o: 30.0 if o == low and not passes else 80.0)
    assert [(a.seq, a.unit.kind) for a in handed] == [
        (seq, Unit.Kind.GOLD if seq == slot else Unit.Kind.REGULAR) for seq in range(1, size)
    ]
    control = ControlUnit.objects.get(unit=gold.unit)
    assert control.gold.item_id == gold_item.pk and control.batch == 0
    # Nothing tells it apart: the fields of a regular document unit as handed out (its segments, sources,
    # outputs), no word of gold, expectation or explanation.
    assert _shape(shown) == _shape(regular)
    per_assignment = ("id", "seq", "created_at", "expires_at", "shown_order", "item", "document", "progress")
    assert {k: v for k, v in shown.items() if k not in per_assignment} == {
        k: v for k, v in regular.items() if k not in per_assignment
    }
    assert [s["source"] for s in shown["document"]] == [f"Quelle {doc[3:]}.{k}." for k in range(4)]
    assert "EXPLAINED" not in repr(shown) and "gold" not in repr(shown).lower()
    segments = _segments(gold.unit, gold.shown_order)
    assert [s["outputs"] for s in shown["document"]] == segments
    assert [o["id"] for o in shown["item"]["outputs"]] == list(gold.shown_order)

    (cj,) = ControlJudgement.objects.filter(control=control)
    assert cj.passed is passes
    assert Assignment.objects.get(pk=gold.pk).status == Assignment.Status.DONE  # silent: never sent back
    assert not SpanJudgement.objects.filter(assignment=gold).exists()
    assert campaign_quality(campaign=campaign)[annotator.pk].as_json()["gold"] == {"judged": 1, "passed": int(passes)}
