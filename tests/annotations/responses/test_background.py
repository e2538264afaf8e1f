"""Background questions (issue 41 part 4): asked once before the first unit, to accounts and
join-link visitors alike; stored per annotator; researchers see them only in aggregate (campaign
page, dataset card); exported under the annotator's pseudonym; escaped everywhere."""

import io
import json
import re

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.urls import reverse

from annotations.models import Annotator, BackgroundAnswer
from annotations.services.campaigns import campaign_create
from annotations.studies.services import join_link_create

pytestmark = pytest.mark.django_db

QUESTIONS = [
    {"name": "native", "label": "Native language <b>", "type": "choice", "choices": ["English", "German", "Other"]},
    {"name": "years", "label": "Years of translation experience", "type": "number", "min": 0, "max": 60},
    {"name": "field", "label": "Field of expertise", "type": "text", "required": False},
]
PROLIFIC = {"PROLIFIC_PID": "5f0c1e2d3b4a596877665544", "STUDY_ID": "64a0b1c2d3e4f5a6b7c8d9e0", "SESSION_ID": "s1"}


@pytest.fixture
def campaign(dataset):
    return campaign_create(
        dataset=dataset,
        name="Asked",
        protocol="likert",
        criteria=["fluency"],
        scale_min=1,
        scale_max=5,
        redundancy=2,
        units_per_batch=2,
        options={"background": QUESTIONS},
    )


def _start(client, campaign):
    return client.post(reverse("annotate-campaign", args=[campaign.pk]))


def test_questions_come_before_the_first_unit_and_are_asked_once(client, annotator, campaign):
    client.force_login(annotator)
    started = _start(client, campaign)
    assert started.status_code == 302 and started["Location"] == reverse("annotate-background", args=[campaign.pk])
    page = client.get(started["Location"]).content.decode()
    # Every question, escaped; the choices as radio buttons.
    assert "Native language &lt;b&gt;" in page and "<b>" not in page.split("Native language")[1][:20]
    assert page.count('type="radio" name="native"') == 3 and 'type="number"' in page and 'name="field"' in page

    refused = client.post(started["Location"], {"native": "Klingon", "years": "-3"})
    assert refused.status_code == 400
    text = refused.content.decode()
    assert "choose one of the options offered" in text and "must be between 0 and 60" in text
    assert not BackgroundAnswer.objects.exists()

    saved = client.post(started["Location"], {"native": "German", "years": "7", "field": ""})
    assert saved.status_code == 302 and saved["Location"] == reverse("annotate-campaign", args=[campaign.pk])
    stored = BackgroundAnswer.objects.get()
    assert stored.answers == {"native": "German", "years": 7, "field": None}
    assert stored.annotator.user == annotator
    # Answered: Start hands out the unit, and the form is not shown again.
    assert _start(client, campaign)["Location"] == reverse("annotate-unit", args=[campaign.pk])
    again = client.get(reverse("annotate-background", args=[campaign.pk]))
    assert again.status_code == 302 and again["Location"] == reverse("annotate-campaign", args=[campaign.pk])


def test_join_link_participants_answer_too(client, campaign):
    link = join_link_create(campaign=campaign, completion_url="https://app.prolific.com/submissions/complete?cc={code}")
    started = client.post(reverse("join", args=[link.token]), PROLIFIC)
    assert started.status_code == 302 and started["Location"] == reverse("annotate-background", args=[campaign.pk])
    assert client.get(started["Location"]).status_code == 200  # the join session may reach it
    saved = client.post(started["Location"], {"native": "English", "years": "2"})
    assert saved.status_code == 302
    assert client.post(saved["Location"])["Location"] == reverse("annotate-unit", args=[campaign.pk])
    answer = BackgroundAnswer.objects.get()
    assert answer.annotator.namespace == Annotator.Namespace.IMPORT
    assert answer.answers["native"] == "English"


def test_a_campaign_without_questions_goes_straight_to_its_unit(client, annotator, dataset):
    plain = campaign_create(
        dataset=dataset, name="Plain", protocol="likert", criteria=["fluency"], scale_min=1, scale_max=5
    )
    client.force_login(annotator)
    assert _start(client, plain)["Location"] == reverse("annotate-unit", args=[plain.pk])


@pytest.mark.parametrize(
    "questions, reason",
    [
        ([{"name": "x", "label": "X", "type": "choice", "choices": ["only"]}], "choices must be 2-50"),
        ([{"name": "x y", "label": "X", "type": "text"}], "name must be 1-40"),
        ([{"name": "x", "label": "X", "type": "date"}], "type must be one of choice, number, text"),
        ([{"name": "x", "label": "X"}, {"name": "x", "label": "Y"}], "question names must be distinct"),
        ([{"name": "x", "label": "X", "type": "number", "min": 5, "max": 1}], "min must not be above max"),
    ],
)
def test_bad_questions_are_refused_by_name(dataset, questions, reason):
    with pytest.raises(ValidationError) as caught:
        campaign_create(
            dataset=dataset,
            name="Bad",
            protocol="likert",
            criteria=["fluency"],
            scale_min=1,
            scale_max=5,
            options={"background": questions},
        )
    assert "options.background: " in str(caught.value) and reason in str(caught.value)


def _answer(client, campaign, user, data):
    client.force_login(user)
    _start(client, campaign)
    client.post(reverse("annotate-background", args=[campaign.pk]), data)


def test_researchers_see_the_answers_in_aggregate_and_export_them_pseudonymised(
    client, campaign, researcher, annotator, project, tmp_path
):
    from annotations.models import Membership
    from tests.annotations.factories import MembershipFactory, UserFactory

    second = MembershipFactory(project=project, user=UserFactory(username="bo"), role=Membership.Role.ANNOTATOR).user
    _answer(client, campaign, annotator, {"native": "German", "years": "7", "field": "law"})
    _answer(client, campaign, second, {"native": "German", "years": "2", "field": "Law"})

    client.force_login(researcher)
    page = client.get(reverse("campaign-detail", args=[campaign.pk])).content.decode()
    section = page.split('id="background-answers"')[1].split("</section>")[0]
    assert "2 annotators answered" in section
    assert "Native language &lt;b&gt; (2 answered): English 0, German 2, Other 0" in section
    assert "Years of translation experience (2 answered): mean 4.5, median 4.5, range 2-7" in section
    assert "common answers: law 2" in section
    assert "anna" not in section and "bo" not in section

    call_command("export_dataset", "--campaign", campaign.name, "--out", str(tmp_path), "--json", stdout=io.StringIO())
    rows = [json.loads(line) for line in (tmp_path / "background.jsonl").read_text().splitlines()]
    assert sorted((r["native"], r["years"], r["field"]) for r in rows) == [("German", 2, "Law"), ("German", 7, "law")]
    assert all(re.fullmatch(r"annotator-[0-9a-f]+", r["annotator"]) for r in rows)
    card = (tmp_path / "README.md").read_text()
    assert "Background questions asked before the first unit (`background.jsonl`" in card
    assert "(2 answered): English 0, German 2, Other 0" in card
    assert "mean 4.5, median 4.5, range 2-7" in card
    # The HEDS 3.0 form's 3.2.5 and Croissant's annotator demographics carry the same aggregate.
    heds = json.loads((tmp_path / "heds.json").read_text())
    characteristics = next(v for k, v in heds.items() if k.endswith("evaluators-characteristics"))
    shown = json.dumps(characteristics, ensure_ascii=False)
    assert "(2 answered): English 0, German 2, Other 0" in shown and "range 2-7" in shown
    demographics = json.loads((tmp_path / "croissant.json").read_text())["rai:annotatorDemographics"]
    assert "(2 answered): English 0, German 2, Other 0" in demographics
