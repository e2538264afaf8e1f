"""Every model registered in the admin: changelist, add and change pages load."""

import pytest
from django.contrib import admin
from django.urls import reverse

from annotations.models import ImportJob, Membership
from annotations.services.assignments import assignment_next
from tests.annotations.factories import (
    AnnotatorFactory,
    BestWorstJudgementFactory,
    CampaignFactory,
    DatasetFactory,
    ErrorSpanFactory,
    ItemFactory,
    MembershipFactory,
    OutputFactory,
    PairwiseJudgementFactory,
    RatingJudgementFactory,
    ReferenceFactory,
    SpanJudgementFactory,
    SystemFactory,
    UserFactory,
)

REGISTERED = sorted(admin.site._registry, key=lambda m: m._meta.label)


@pytest.fixture
def data(db):
    dataset = DatasetFactory()
    project = dataset.project
    MembershipFactory(project=project, role=Membership.Role.OWNER)
    item = ItemFactory(dataset=dataset, data=[["Blue Spice", "eatType", "pub"]], meta={"k": "v"})
    ReferenceFactory(item=item, position=0)
    a, b = SystemFactory(dataset=dataset), SystemFactory(dataset=dataset)
    out_a, out_b = OutputFactory(item=item, system=a), OutputFactory(item=item, system=b)
    low, high = sorted([out_a, out_b], key=lambda o: o.pk)
    annotator = AnnotatorFactory(project=project, user=UserFactory())
    likert = CampaignFactory(dataset=dataset)
    pairwise = CampaignFactory(dataset=dataset, protocol="pairwise", scale_min=None, scale_max=None)
    bws = CampaignFactory(dataset=dataset, protocol="bws", scale_min=None, scale_max=None)
    esa = CampaignFactory(dataset=dataset, protocol="esa", scale_min=0, scale_max=100)
    assignment_next(campaign=likert, annotator=annotator)
    common = {"annotator": annotator, "criterion": "fluency"}
    RatingJudgementFactory(campaign=likert, output=out_a, score=3, **common)
    PairwiseJudgementFactory(campaign=pairwise, output_a=low, output_b=high, **common)
    BestWorstJudgementFactory(campaign=bws, best=low, worst=high, **common)
    span_judgement = SpanJudgementFactory(campaign=esa, output=out_a, score=70, **common)
    ErrorSpanFactory(judgement=span_judgement, end=2)
    post_edit = CampaignFactory(dataset=dataset, protocol="post-edit", scale_min=None, scale_max=None)
    from annotations.models import PostEditJudgement

    PostEditJudgement.objects.create(
        campaign=post_edit, item=item, output=out_a, post_edit="edited", score=50.0, **common
    )
    # ESA^AI (annotations.models.prefill): a suggestion and the decision on it.
    from annotations.models import SpanPrefill, SpanSuggestion, SuggestionDecision

    SpanPrefill.objects.create(campaign=esa, run_id=1, metric="llm-judge")
    suggestion = SpanSuggestion.objects.create(campaign=esa, output=out_a, position=0, start=0, end=2, severity="minor")
    SuggestionDecision.objects.create(
        judgement=span_judgement, suggestion=suggestion, decision="accepted", start=0, end=2, severity="minor"
    )
    # Quality control (annotations.quality): one row of each.
    from annotations.quality import services as quality
    from annotations.quality.services.controls import _gold_control

    quality.quality_settings_update(campaign=likert, degraded_share=0.1)
    gold = quality.gold_unit_create(campaign=likert, item=item, outputs=[out_a], expected={"*": {"min": 1}})
    _gold_control(campaign=likert, annotator=annotator, gold_unit=gold, batch=0)
    control = likert.control_units.get()
    control.judgements.create(
        campaign=likert,
        annotator=annotator,
        kind="gold",
        item=item,
        criterion="fluency",
        answer={"scores": {}},
        passed=True,
    )
    quality.annotator_decide(campaign=likert, annotator=annotator, included=False, reason="test")
    quality.completion_code_issue(campaign=likert, annotator=annotator, batch=0)
    ImportJob.objects.create(
        user=annotator.user,
        project=project,
        dataset_name="big",
        filename="big.jsonl",
        size=10,
        status=ImportJob.Status.FAILED,
        errors=["line 1: invalid JSON"],
    )
    from annotations.models.exports import ExportJob

    ExportJob.objects.create(campaign=likert, user=annotator.user, options={"format": "jsonl"})
    # Background answers and a unit's note (annotations.models.responses).
    from annotations.models import BackgroundAnswer, UnitNote

    BackgroundAnswer.objects.create(campaign=likert, annotator=annotator, answers={"native": "German"})
    UnitNote.objects.create(
        campaign=likert, annotator=annotator, item=item, outputs=[out_a.pk], unit_key="u", text="a comment"
    )
    # Study links (annotations.studies): a link and one visitor.
    from annotations.studies.services import Visitor, join_link_create, join_participant_enter

    link = join_link_create(campaign=likert, completion_url="https://example.org/done?cc={code}")
    join_participant_enter(link=link, visitor=Visitor(platform="prolific", platform_id="5f0c1e2d3b4a596877665544"))
    from annotations.services.login_links import login_link_create

    login_link_create(user=UserFactory(username="linked", password=None), project=project)
    # What the workers keep (issue 45): a figure and its campaign's state (the units' triggers fill UnitCount).
    from annotations.models import FigureSnapshot, FigureState

    FigureSnapshot.objects.create(campaign=likert, name="meta", key="k", stamp="s", value=b"x")
    FigureState.objects.create(campaign=likert)


@pytest.fixture
def admin_client(client, data):
    client.force_login(UserFactory(username="root", is_superuser=True, is_staff=True))
    return client


def test_all_annotations_models_are_registered():
    from django.apps import apps

    assert set(apps.get_app_config("annotations").get_models()) <= set(REGISTERED)


@pytest.mark.parametrize("model", REGISTERED, ids=lambda m: m._meta.label)
def test_admin_pages_load(admin_client, model):
    info = (model._meta.app_label, model._meta.model_name)
    changelist = admin_client.get(reverse("admin:%s_%s_changelist" % info))
    assert changelist.status_code == 200
    obj = model._default_manager.order_by("pk").first()
    if model._meta.app_label == "annotations":
        assert obj is not None  # the fixture fills every annotations table
    if obj is not None:
        assert changelist.context["cl"].result_count >= 1
        change = admin_client.get(reverse("admin:%s_%s_change" % info, args=[obj.pk]))
        assert change.status_code == 200
    # django-axes' login records are read-only by design: nobody adds one by hand. Nor a login
    # link: its token is shown once where it is issued (the members page, `add_member --links`).
    # Nor the rows the database and the workers keep (progress counters, figures).
    read_only = {
        "annotations.LoginLink",
        "annotations.UnitCount",
        "annotations.DatasetCount",
        "annotations.FigureSnapshot",
        "annotations.FigureState",
    }
    expected = 403 if model._meta.app_label == "axes" or model._meta.label in read_only else 200
    assert admin_client.get(reverse("admin:%s_%s_add" % info)).status_code == expected
