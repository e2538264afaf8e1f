"""Revising a finished unit of the batch in progress: the service, the page, its JSON submit and
`POST /api/assignments/{id}/revise/` (replace the judgements, count nothing twice, lock the batch
once it is complete)."""

import json

import pytest
from django.urls import reverse

from annotations.models import Assignment, Enrolment, ErrorSpan, Output, RatingJudgement, SpanJudgement, Unit
from annotations.models.quality import CompletionCode
from annotations.quality.services import quality_settings_update
from annotations.services.assignments import assignment_next
from annotations.services.campaigns import campaign_create
from annotations.services.handles import output_handle
from annotations.services.projects import annotator_get_or_create
from annotations.services.submissions import unit_submit
from tests.protocol_plugin import campaign_settings, every_protocol

pytestmark = pytest.mark.django_db


@pytest.fixture
def campaign(dataset):
    # Five single-output units (item-1 and item-3 have two outputs, item-2 one), batches of 3.
    return campaign_create(
        dataset=dataset,
        name="Rate me",
        protocol="likert",
        criteria=["fluency"],
        scale_min=1,
        scale_max=5,
        redundancy=2,
        units_per_batch=3,
    )


@pytest.fixture
def me(campaign, annotator):
    return annotator_get_or_create(project=campaign.project, name=annotator.username, user=annotator)


def _do(campaign, me, score=3):
    assignment, _ = assignment_next(campaign=campaign, annotator=me)
    unit_submit(
        annotator=me,
        assignment_id=assignment.pk,
        judgements=[{"criterion": "fluency", "output": assignment.unit.outputs[0], "score": score}],
        time_spent_ms=1000,
    )
    return Assignment.objects.get(pk=assignment.pk)


def _counts(campaign, me):
    return (
        Enrolment.objects.get(campaign=campaign, annotator=me).n_done,
        sorted(Unit.objects.filter(campaign=campaign).values_list("id", "n_done")),
    )


def _body(assignment, score):
    # As the page sends it: outputs named by the handles the assignment showed (annotations.services.handles).
    return json.dumps(
        {
            "judgements": [
                {
                    "criterion": "fluency",
                    "output": output_handle(assignment.pk, assignment.unit.outputs[0]),
                    "score": score,
                }
            ],
            "shown_order": [output_handle(assignment.pk, i) for i in assignment.shown_order],
        }
    )


def test_the_page_reopens_a_done_unit_with_its_answer_and_replaces_it(client, annotator, campaign, me):
    first, second = _do(campaign, me, 2), _do(campaign, me, 4)
    before = _counts(campaign, me)
    first_time = RatingJudgement.objects.get(assignment=first).time_spent_ms  # the server's figure
    client.force_login(annotator)
    page = client.get(reverse("annotate-revise", args=[first.pk]))
    assert page.status_code == 200
    config = json.loads(
        page.content.decode().split('id="unit-config" type="application/json">')[1].split("</script>")[0]
    )
    # The stored answer, as the draft the page restores; sent to the revise endpoint, not submit.
    assert config["draft"]["fields"] == {f"s-0-{output_handle(first.pk, first.unit.outputs[0])}": "2"}
    assert config["submit_url"] == reverse("annotate-revise-submit", args=[first.pk]) and not config["draft_url"]
    response = client.post(
        reverse("annotate-revise-submit", args=[first.pk]), _body(first, 5), content_type="application/json"
    )
    assert response.status_code == 200, response.content
    assert response.json()["next"] == reverse("annotate-unit", args=[campaign.pk])
    (row,) = RatingJudgement.objects.filter(assignment=first)
    assert (row.score, row.origin, row.status, row.time_spent_ms) == (5, "browser", "complete", first_time)
    assert RatingJudgement.objects.filter(annotator=me).count() == 2  # replaced, not added
    assert _counts(campaign, me) == before  # nothing counted twice
    assert RatingJudgement.objects.get(assignment=second).score == 4


def test_the_api_revises_and_refuses_bad_answers_with_the_submit_rules(client, annotator, campaign, me):
    first = _do(campaign, me, 2)
    client.force_login(annotator)
    url = reverse("api-assignment-revise", args=[first.pk])
    bad = client.post(
        url,
        json.dumps(
            {
                "judgements": [
                    {"criterion": "fluency", "output": output_handle(first.pk, first.unit.outputs[0]), "score": 9}
                ]
            }
        ),
        content_type="application/json",
    )
    assert bad.status_code == 400 and "judgement 1" in json.dumps(bad.json())
    assert RatingJudgement.objects.get(assignment=first).score == 2  # the refused revision changed nothing
    ok = client.post(url, _body(first, 1), content_type="application/json")
    assert ok.status_code == 200 and ok.json()["judgements"] == 1
    assert RatingJudgement.objects.get(assignment=first).score == 1
    assert RatingJudgement.objects.get(assignment=first).origin == "api"


def test_a_complete_batch_is_locked_and_a_pending_unit_cannot_be_revised(client, annotator, campaign, me):
    units = [_do(campaign, me, 3) for _ in range(3)]  # batch 1 complete
    client.force_login(annotator)
    for unit in units:
        page = client.get(reverse("annotate-revise", args=[unit.pk]))
        assert page.status_code == 400 and "batch is complete" in page.content.decode()
        api = client.post(
            reverse("api-assignment-revise", args=[unit.pk]), _body(unit, 1), content_type="application/json"
        )
        assert api.status_code == 400 and "batch is complete" in json.dumps(api.json())
        form = client.post(
            reverse("annotate-revise-submit", args=[unit.pk]), _body(unit, 1), content_type="application/json"
        )
        assert form.status_code == 400 and "batch is complete" in " ".join(form.json()["errors"])
    assert set(RatingJudgement.objects.filter(annotator=me).values_list("score", flat=True)) == {3}
    # Batch 2: its first unit may be revised, the pending one not (submit it).
    fourth = _do(campaign, me, 3)
    assert (
        client.post(
            reverse("api-assignment-revise", args=[fourth.pk]), _body(fourth, 5), content_type="application/json"
        ).status_code
        == 200
    )
    pending, _ = assignment_next(campaign=campaign, annotator=me)
    response = client.post(
        reverse("api-assignment-revise", args=[pending.pk]), _body(pending, 5), content_type="application/json"
    )
    assert response.status_code == 400 and "not submitted yet" in json.dumps(response.json())


def test_a_completion_code_after_part_of_a_batch_locks_it(client, annotator, campaign, me):
    quality_settings_update(campaign=campaign, completion_codes=True)
    first = _do(campaign, me, 3)
    CompletionCode.objects.create(campaign=campaign, annotator=me, batch=0, code="ABCD-EFGH-J", passed=True)
    client.force_login(annotator)
    response = client.post(
        reverse("api-assignment-revise", args=[first.pk]), _body(first, 5), content_type="application/json"
    )
    assert response.status_code == 400 and "batch is complete" in json.dumps(response.json())


def test_someone_elses_unit_is_not_found(client, researcher, annotator, campaign, me):
    first = _do(campaign, me, 3)
    client.force_login(researcher)
    assert client.get(reverse("annotate-revise", args=[first.pk])).status_code == 404
    assert (
        client.post(
            reverse("annotate-revise-submit", args=[first.pk]), _body(first, 1), content_type="application/json"
        ).status_code
        == 404
    )
    assert (
        client.post(
            reverse("api-assignment-revise", args=[first.pk]), _body(first, 1), content_type="application/json"
        ).status_code
        == 404
    )


def test_the_unit_page_shows_the_batch_strip_and_no_campaign_progress_to_annotators(
    client, annotator, researcher, campaign, me
):
    first = _do(campaign, me, 3)
    client.force_login(annotator)
    html = client.post(reverse("annotate-campaign", args=[campaign.pk]), follow=True).content.decode()  # Start (a POST)
    assert reverse("annotate-revise", args=[first.pk]) in html
    assert "Your batch: <strong>1 / 3</strong>" in html
    assert "complete" not in html.split('class="work-progress"')[1].split("</div>\n</div>")[0]
    home = client.get(reverse("annotate-home")).content.decode()
    assert "Your batch: 1 / 3" in home and "of the campaign complete" not in home
    client.force_login(researcher)
    assert "of the campaign complete" in client.get(reverse("annotate-home")).content.decode()


@pytest.fixture
def esa(dataset):
    return campaign_create(
        dataset=dataset, name="Spans", protocol="esa", criteria=["quality"], redundancy=1, units_per_batch=5
    )


def test_an_esa_revision_replaces_the_spans(client, annotator, esa):
    me = annotator_get_or_create(project=esa.project, name=annotator.username, user=annotator)
    assignment, _ = assignment_next(campaign=esa, annotator=me)
    output = assignment.unit.outputs[0]
    unit_submit(
        annotator=me,
        assignment_id=assignment.pk,
        judgements=[
            {
                "criterion": "quality",
                "output": output,
                "score": 40,
                "spans": [{"start": 0, "end": 3, "severity": "major"}, {"missing": True, "severity": "minor"}],
            }
        ],
    )
    client.force_login(annotator)
    page = client.get(reverse("annotate-revise", args=[assignment.pk])).content.decode()
    draft = json.loads(page.split('id="unit-config" type="application/json">')[1].split("</script>")[0])["draft"]
    assert draft["spans"] == [
        {"start": 0, "end": 3, "severity": "major", "missing": False},
        {"start": None, "end": None, "severity": "minor", "missing": True},
    ]
    response = client.post(
        reverse("annotate-revise-submit", args=[assignment.pk]),
        json.dumps(
            {
                "judgements": [
                    {
                        "criterion": "quality",
                        "output": output_handle(assignment.pk, output),
                        "score": 90,
                        "spans": [{"missing": True, "severity": "major"}],
                    }
                ]
            }
        ),
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    (row,) = SpanJudgement.objects.filter(assignment=assignment)
    assert row.score == 90
    assert list(ErrorSpan.objects.values_list("start", "end", "severity", "missing")) == [(None, None, "major", True)]


def test_a_cesa_revision_reopens_each_outputs_spans(client, annotator, dataset):
    cesa = campaign_create(
        dataset=dataset,
        name="Contrastive",
        protocol="cesa",
        criteria=["quality"],
        redundancy=1,
        units_per_batch=5,
        tuple_size=2,
    )
    me = annotator_get_or_create(project=cesa.project, name=annotator.username, user=annotator)
    assignment, _ = assignment_next(campaign=cesa, annotator=me)
    while len(assignment.unit.outputs) < 2:  # item-2 has one output: a unit of its own
        unit_submit(
            annotator=me,
            assignment_id=assignment.pk,
            judgements=[{"criterion": "quality", "output": assignment.unit.outputs[0], "score": 50}],
        )
        assignment, _ = assignment_next(campaign=cesa, annotator=me)
    first, second = assignment.shown_order
    unit_submit(
        annotator=me,
        assignment_id=assignment.pk,
        shown_order=[first, second],
        judgements=[
            {
                "criterion": "quality",
                "output": first,
                "score": 40,
                "spans": [{"start": 0, "end": 3, "severity": "major"}],
            },
            {"criterion": "quality", "output": second, "score": 70, "spans": [{"missing": True, "severity": "minor"}]},
        ],
    )
    client.force_login(annotator)
    page = client.get(reverse("annotate-revise", args=[assignment.pk])).content.decode()
    draft = json.loads(page.split('id="unit-config" type="application/json">')[1].split("</script>")[0])["draft"]
    # Keyed by the handles the page names the outputs by, never by their ids.
    assert draft["spans_by_output"] == {
        output_handle(assignment.pk, first): [{"start": 0, "end": 3, "severity": "major", "missing": False}],
        output_handle(assignment.pk, second): [{"start": None, "end": None, "severity": "minor", "missing": True}],
    }
    assert f"s-0-{output_handle(assignment.pk, second)}" in draft["fields"]


def test_an_mqm_revision_keeps_the_categories_and_recomputes_the_score(client, annotator, dataset):
    mqm = campaign_create(
        dataset=dataset, name="MQM", protocol="mqm", criteria=["mqm"], redundancy=1, units_per_batch=5
    )
    me = annotator_get_or_create(project=mqm.project, name=annotator.username, user=annotator)
    assignment, _ = assignment_next(campaign=mqm, annotator=me)
    output = assignment.unit.outputs[0]
    unit_submit(
        annotator=me,
        assignment_id=assignment.pk,
        judgements=[
            {
                "criterion": "mqm",
                "output": output,
                "spans": [{"start": 0, "end": 3, "severity": "major", "category": "Accuracy/Mistranslation"}],
            }
        ],
    )
    client.force_login(annotator)
    page = client.get(reverse("annotate-revise", args=[assignment.pk])).content.decode()
    draft = json.loads(page.split('id="unit-config" type="application/json">')[1].split("</script>")[0])["draft"]
    assert draft["spans"] == [
        {"start": 0, "end": 3, "severity": "major", "missing": False, "category": "Accuracy/Mistranslation"}
    ]
    response = client.post(
        reverse("annotate-revise-submit", args=[assignment.pk]),
        json.dumps(
            {
                "judgements": [
                    {
                        "criterion": "mqm",
                        "output": output_handle(assignment.pk, output),
                        "spans": [{"missing": True, "severity": "minor", "category": "Fluency/Punctuation"}],
                    }
                ]
            }
        ),
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    (row,) = SpanJudgement.objects.filter(assignment=assignment)
    assert row.score == pytest.approx(-0.1)  # Minor/Fluency/Punctuation: 0.1
    assert list(ErrorSpan.objects.values_list("severity", "category", "missing")) == [
        ("minor", "Fluency/Punctuation", True)
    ]


def test_a_control_unit_is_revised_like_any_other(client, annotator, dataset):
    """Controls stay indistinguishable: reopened with their answers, revised through the same door,
    their answer replaced in quality control (never written to the judgement tables)."""
    from annotations.models.quality import ControlJudgement

    campaign = campaign_create(
        dataset=dataset,
        name="Controlled",
        protocol="likert",
        criteria=["fluency"],
        scale_min=1,
        scale_max=5,
        redundancy=1,
        units_per_batch=20,
    )
    quality_settings_update(campaign=campaign, degraded_share=0.5, repeat_share=0.5)
    me = annotator_get_or_create(project=campaign.project, name=annotator.username, user=annotator)
    done = []
    for _ in range(12):
        assignment, _ = assignment_next(campaign=campaign, annotator=me)
        if assignment is None:
            break
        unit_submit(
            annotator=me,
            assignment_id=assignment.pk,
            judgements=[{"criterion": "fluency", "output": assignment.shown_order[0], "score": 2}],
            time_spent_ms=900,
        )
        done.append(Assignment.objects.select_related("unit").get(pk=assignment.pk))
    control = next(a for a in done if a.unit.kind != Unit.Kind.REGULAR)
    regular_rows = RatingJudgement.objects.count()
    client.force_login(annotator)
    page = client.get(reverse("annotate-revise", args=[control.pk])).content.decode()
    config = json.loads(page.split('id="unit-config" type="application/json">')[1].split("</script>")[0])
    output = config["outputs"][0]["id"]
    assert config["draft"]["fields"] == {f"s-0-{output}": "2"}
    response = client.post(
        reverse("annotate-revise-submit", args=[control.pk]),
        json.dumps(
            {
                "judgements": [{"criterion": "fluency", "output": output, "score": 5}],
                "shown_order": config["shown_order"],
            }
        ),
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    (answer,) = ControlJudgement.objects.filter(assignment=control)
    assert answer.answer["scores"] == {str(control.shown_order[0]): 5}  # stored by the (alias) id, not the handle
    assert RatingJudgement.objects.count() == regular_rows


@pytest.mark.parametrize("protocol", ["pairwise", "bws"])
def test_choice_answers_are_shown_as_the_page_names_them_and_revised(client, annotator, dataset, protocol):
    """Pairwise winners are stored for the pair ordered by id but shown as A (first shown) / B; best-worst
    choices by output id: the reopened page must name the choice the annotator made."""
    from annotations.models import BestWorstJudgement, PairwiseJudgement

    campaign = campaign_create(
        dataset=dataset,
        name=protocol,
        protocol=protocol,
        criteria=["quality"],
        redundancy=1,
        units_per_batch=5,
        **({"tuple_size": 2} if protocol == "bws" else {}),
    )
    me = annotator_get_or_create(project=campaign.project, name=annotator.username, user=annotator)
    assignment, _ = assignment_next(campaign=campaign, annotator=me)
    # Shown against the id order (as the server may choose), so A is not simply the lower id.
    Assignment.objects.filter(pk=assignment.pk).update(shown_order=sorted(assignment.shown_order, reverse=True))
    assignment.refresh_from_db()
    first, second = assignment.shown_order
    answer = (
        {"criterion": "quality", "winner": "a"}
        if protocol == "pairwise"
        else {"criterion": "quality", "best": second, "worst": first}
    )
    unit_submit(annotator=me, assignment_id=assignment.pk, judgements=[answer])
    client.force_login(annotator)
    page = client.get(reverse("annotate-revise", args=[assignment.pk])).content.decode()
    draft = json.loads(page.split('id="unit-config" type="application/json">')[1].split("</script>")[0])["draft"]
    if protocol == "pairwise":
        assert draft["fields"] == {"w-0": "a"}
        revised = {"criterion": "quality", "winner": "b"}
    else:
        h = {i: output_handle(assignment.pk, i) for i in (first, second)}
        assert draft["fields"] == {"b-0": h[second], "x-0": h[first]}
        revised = {"criterion": "quality", "best": h[first], "worst": h[second]}
    response = client.post(
        reverse("annotate-revise-submit", args=[assignment.pk]),
        json.dumps({"judgements": [revised]}),
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    if protocol == "pairwise":
        (row,) = PairwiseJudgement.objects.filter(assignment=assignment)
        assert (row.output_a_id if row.winner == "a" else row.output_b_id) == second  # B, the one shown second
    else:
        (row,) = BestWorstJudgement.objects.filter(assignment=assignment)
        assert (row.best_id, row.worst_id) == (first, second)


def test_the_esa_slider_has_tick_labels_and_the_scales_end_descriptions(client, annotator, dataset):
    campaign = campaign_create(
        dataset=dataset,
        name="Ticks",
        protocol="esa",
        criteria=["quality"],
        redundancy=1,
        criteria_config=[
            {"name": "quality", "scale_min": 0, "scale_max": 100, "min_label": "broken <b>", "max_label": "perfect"}
        ],
    )
    client.force_login(annotator)
    html = client.post(reverse("annotate-campaign", args=[campaign.pk]), follow=True).content.decode()  # Start (a POST)
    ticks = html.split('class="slider-ticks"')[1].split("</div>")[0]
    assert [t.split("<")[0] for t in ticks.split('<span class="tick">')[1:]] == ["0", "25", "50", "75", "100"]
    anchors = html.split('class="slider-anchors')[1].split("</div>")[0]
    assert "broken &lt;b&gt;" in anchors and "perfect" in anchors  # escaped
    assert 'id="esa-text" dir="auto"' in html  # right-to-left outputs laid out right to left


def _same(sent: list[dict], stored: list[dict]) -> bool:
    """The stored answers say what was sent (the keys sent; spans compared key by key, as stored)."""
    from annotations.protocols.esa import span_record

    def norm(answer, keys):
        return {k: ([span_record(s) for s in answer[k]] if k == "spans" else answer[k]) for k in keys}

    keys = [sorted(a) for a in sent]
    return sorted(map(repr, (norm(a, k) for a, k in zip(sent, keys)))) == sorted(
        map(repr, (norm(a, k) for a, k in zip(stored, keys)))
    )


@pytest.mark.parametrize("protocol", every_protocol())
def test_every_protocol_reopens_its_answers_and_revises_them(client, annotator, dataset, protocol, registered):
    """Answers of every registered protocol (the test-only plugin included) come back as they were
    given, the page restores them as its draft, and the revision replaces them."""
    import random

    from annotations import protocols
    from annotations.selectors.batches import assignment_answers

    campaign = campaign_create(
        dataset=dataset,
        name=protocol,
        protocol=protocol,
        criteria=["quality"],
        redundancy=1,
        units_per_batch=5,
        **campaign_settings(protocol),
    )
    me = annotator_get_or_create(project=campaign.project, name=annotator.username, user=annotator)
    assignment, _ = assignment_next(campaign=campaign, annotator=me)
    texts = dict(Output.objects.filter(pk__in=assignment.shown_order).values_list("pk", "text"))
    rng = random.Random(5)

    def answers(ids, impressions):
        outputs = [{"id": i, "text": texts[real]} for i, real in zip(ids, assignment.shown_order)]
        return protocols.get(protocol).simulated_answers(
            campaign, "quality", outputs, lambda o: impressions[ids.index(o["id"])], rng
        )

    given = answers(list(assignment.shown_order), [20, 90, 60, 40][: len(assignment.shown_order)])
    unit_submit(annotator=me, assignment_id=assignment.pk, judgements=given, shown_order=assignment.shown_order)
    assignment = Assignment.objects.get(pk=assignment.pk)
    assert _same(given, assignment_answers(assignment=assignment))

    client.force_login(annotator)
    page = client.get(reverse("annotate-revise", args=[assignment.pk])).content.decode()
    draft = json.loads(page.split('id="unit-config" type="application/json">')[1].split("</script>")[0])["draft"]
    # every question answered is restored: inputs, spans, or the protocol's own part (post-edit: the texts)
    assert draft["fields"] or draft["spans"] or draft.get("post_edits")
    handles = [output_handle(assignment.pk, i) for i in assignment.shown_order]
    revised = answers(handles, [95, 10, 30, 70][: len(handles)])
    response = client.post(
        reverse("annotate-revise-submit", args=[assignment.pk]),
        json.dumps({"judgements": revised}),
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    real = dict(zip(handles, assignment.shown_order))
    in_ids = [{k: real.get(v, v) if k in ("output", "best", "worst") else v for k, v in a.items()} for a in revised]
    assert _same(in_ids, assignment_answers(assignment=Assignment.objects.get(pk=assignment.pk)))
