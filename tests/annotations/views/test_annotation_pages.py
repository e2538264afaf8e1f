"""Annotation pages without a browser: who may open what, blindness, set-up, members."""

import json
import re

import pytest
from django.urls import reverse

from annotations.models import Assignment, Campaign, Membership, RatingJudgement
from annotations.services.campaigns import campaign_create
from annotations.services.handles import output_handle
from annotations.templatetags.workbench import markdown_html
from tests.annotations.factories import UserFactory, campaign_form_data

pytestmark = pytest.mark.django_db


@pytest.fixture
def campaign(dataset):
    return campaign_create(
        dataset=dataset,
        name="Rate me",
        protocol="likert",
        criteria=["fluency"],
        scale_min=1,
        scale_max=5,
        redundancy=2,
        instructions="**Bold** <script>alert(1)</script>",
    )


def test_annotator_home_lists_campaigns_with_continue(client, annotator, campaign):
    client.force_login(annotator)
    html = client.get(reverse("annotate-home")).content.decode()
    assert "Rate me" in html and reverse("annotate-campaign", args=[campaign.pk]) in html


def test_protocol_page_is_blind_and_escapes_instructions(client, annotator, campaign):
    client.force_login(annotator)
    response = client.post(reverse("annotate-campaign", args=[campaign.pk]), follow=True)
    html = response.content.decode()
    assert response.status_code == 200
    assert "sysA" not in html and "sysB" not in html
    assert "<strong>Bold</strong>" in html and "<script>alert(1)</script>" not in html
    # No inline code (CSP): every script is a file or JSON data.
    scripts = re.findall(r"<script[^>]*>", html)
    assert scripts and all("src=" in tag or 'type="application/json"' in tag for tag in scripts)
    assert not re.findall(r"<[a-z]+ [^>]*\son[a-z]+=", html)  # no inline event handlers
    assignment = Assignment.objects.get(annotator__user=annotator)
    # The page names outputs by opaque handles of this assignment, never by their ids.
    handles = [output_handle(assignment.pk, i) for i in assignment.shown_order]
    config = json.loads(
        re.search(r'<script id="unit-config" type="application/json">(.*?)</script>', html, re.S).group(1)
    )
    assert config["shown_order"] == handles and [o["id"] for o in config["outputs"]] == handles
    assert f'data-output="{handles[0]}"' in html and f'data-output="{assignment.shown_order[0]}"' not in html
    # Submitting through the page stores the unit with origin "browser".
    url = reverse("annotate-submit", args=[assignment.pk])
    bad = client.post(url, "not json", content_type="application/json")
    assert bad.status_code == 400 and "JSON" in bad.json()["errors"][0]
    real_id = client.post(
        url,
        json.dumps({"judgements": [{"criterion": "fluency", "output": assignment.shown_order[0], "score": 4}]}),
        content_type="application/json",
    )
    assert real_id.status_code == 400 and "is not part of this unit" in real_id.json()["errors"][0]
    ok = client.post(
        url,
        json.dumps(
            {
                "judgements": [{"criterion": "fluency", "output": handles[0], "score": 4}],
                "shown_order": handles,
                "time_spent_ms": 1500.0,
            }
        ),
        content_type="application/json",
    )
    assert RatingJudgement.objects.get().origin == "browser"
    # The answer hands out the next unit and carries it, for the page to draw in place: blind too
    # (handles of the new assignment, no system name, no real id), its texts as data.
    assert ok.status_code == 201 and ok.json()["next"] == reverse("annotate-unit", args=[campaign.pk])
    following = Assignment.objects.get(annotator__user=annotator, status="pending")
    unit = ok.json()["unit"]
    handles = [output_handle(following.pk, i) for i in following.shown_order]
    assert unit["config"]["assignment"] == following.pk and unit["config"]["shown_order"] == handles
    assert [o["id"] for o in unit["outputs"]] == handles and "next_method" not in ok.json()
    assert unit["config"]["submit_url"] == reverse("annotate-submit", args=[following.pk])
    assert "sysA" not in ok.content.decode() and "sysB" not in ok.content.decode()
    assert not any(str(i) in json.dumps(unit["config"]["shown_order"]) for i in following.shown_order)
    # Until none is left for them: then the answer sends the page to the landing page's POST (the
    # finished page). Five units (likert, one output each), k = 2: this annotator can do all five.
    for n in range(4):
        handles = unit["config"]["shown_order"]
        answer = client.post(
            unit["config"]["submit_url"],
            json.dumps(
                {"judgements": [{"criterion": "fluency", "output": handles[0], "score": 3}], "shown_order": handles}
            ),
            content_type="application/json",
        ).json()
        unit = answer.get("unit")
        assert (unit is None) == (n == 3), n
    assert answer == {"next": reverse("annotate-campaign", args=[campaign.pk]), "next_method": "POST"}
    assert "finished" in client.post(answer["next"]).content.decode().lower()


def test_someone_elses_assignment_is_not_found(client, annotator, researcher, campaign):
    client.force_login(annotator)
    client.post(reverse("annotate-campaign", args=[campaign.pk]))
    assignment = Assignment.objects.get(annotator__user=annotator)
    client.force_login(researcher)
    for name in ("annotate-submit", "annotate-draft", "annotate-release"):
        assert (
            client.post(reverse(name, args=[assignment.pk]), "{}", content_type="application/json").status_code == 404
        )


def test_campaign_page_for_staff_and_redirect_for_annotators(client, annotator, researcher, outsider, campaign):
    url = reverse("campaign-detail", args=[campaign.pk])
    client.force_login(researcher)
    html = client.get(url).content.decode()
    assert "Per annotator" in html and "sysA" in html and "<strong>Bold</strong>" in html
    assert client.get(reverse("campaign-progress", args=[campaign.pk])).json()["units"] == 5
    assert client.get(reverse("campaign-judgements", args=[campaign.pk])).status_code == 200
    client.force_login(annotator)
    assert client.get(url)["Location"] == reverse("annotate-campaign", args=[campaign.pk])
    assert client.get(reverse("campaign-progress", args=[campaign.pk])).status_code == 404
    assert client.get(reverse("campaign-judgements", args=[campaign.pk])).status_code == 404
    client.force_login(outsider)
    assert client.get(url).status_code == 404


def test_project_page_links_campaign_names(client, annotator, researcher, project, campaign):
    client.force_login(researcher)
    assert (
        reverse("campaign-detail", args=[campaign.pk])
        in client.get(reverse("project-detail", args=[project.pk])).content.decode()
    )
    client.force_login(annotator)  # their campaigns are on their home page; the project page is for staff
    assert client.get(reverse("project-detail", args=[project.pk])).status_code == 404


def test_item_and_dataset_pages_hide_system_names_from_annotators(client, annotator, researcher, dataset):
    item = dataset.items.get(external_id="item-1")
    client.force_login(annotator)
    for url in (reverse("item-detail", args=[item.pk]), reverse("dataset-detail", args=[dataset.pk])):
        response = client.get(url)
        assert response.status_code == 404, url
        assert "sysA" not in response.content.decode() and "sysB" not in response.content.decode(), url
    client.force_login(researcher)
    assert "sysA" in client.get(reverse("item-detail", args=[item.pk])).content.decode()


def test_campaign_set_up_page_creates_and_previews(client, researcher, annotator, project, dataset):
    url = reverse("campaign-new", args=[project.pk])
    client.force_login(annotator)
    assert client.get(url).status_code == 404
    client.force_login(researcher)
    assert client.get(url).status_code == 200
    data = campaign_form_data(
        dataset,
        {"name": "fluency", "question": "Fluent?", "scale_min": 1, "scale_max": 6},
        {"name": "adequacy", "scale_min": 0, "scale_max": 100, "widget": "slider"},
        name="From the page",
        protocol="likert",
        redundancy=2,
        instructions="Rate *carefully*.",
        systems=[dataset.systems.get(name="sysA").pk],
    )
    preview = client.post(url, {**data, "action": "preview"})
    html = preview.content.decode()
    assert preview.status_code == 200 and "Preview" in html and 'id="unit-form"' in html
    assert "sysA" not in html.split("Preview: exactly")[1]
    assert not Campaign.objects.filter(name="From the page").exists()
    created = client.post(url, {**data, "action": "create"})
    campaign = Campaign.objects.get(name="From the page")
    assert created["Location"] == reverse("campaign-detail", args=[campaign.pk])
    fluency, adequacy = campaign.criteria_configs()
    assert (fluency["scale_max"], fluency["question"], adequacy["widget"]) == (6, "Fluent?", "slider")
    assert [s.name for s in campaign.systems.all()] == ["sysA"] and campaign.units.count() == 3
    again = client.post(url, {**data, "action": "create"})
    assert again.status_code == 400 and "already exists" in again.content.decode()


def test_members_page(client, owner, researcher, project):
    url = reverse("project-members", args=[project.pk])
    client.force_login(researcher)
    assert client.get(url).status_code == 403
    client.force_login(owner)
    UserFactory(username="newbie")
    UserFactory(username="ghost", is_active=False)
    client.post(url, {"action": "add", "username": "newbie", "role": "annotator"})
    assert Membership.objects.get(project=project, user__username="newbie").role == "annotator"
    unknown = client.post(url, {"action": "add", "username": "nobody", "role": "annotator"}).content.decode()
    inactive = client.post(url, {"action": "add", "username": "ghost", "role": "annotator"}).content.decode()
    message = "No account with this username can be added."
    assert message in unknown and message in inactive  # the same answer: existence is not revealed
    mine = Membership.objects.get(project=project, user=owner)
    response = client.post(url, {"action": "role", "member": mine.pk, "role": "researcher"}, follow=True)
    assert "keeps at least one owner" in response.content.decode()
    assert Membership.objects.get(pk=mine.pk).role == "owner"
    member = Membership.objects.get(project=project, user__username="newbie")
    client.post(url, {"action": "remove", "member": member.pk})
    assert not Membership.objects.filter(pk=member.pk).exists()


@pytest.mark.parametrize(
    "text,present,absent",
    [
        ("**b** and *i*", ["<strong>b</strong>", "<em>i</em>"], []),
        ("<script>alert(1)</script>", ["&lt;script&gt;"], ["<script>"]),
        ("[x](javascript:alert(1))", [], ['href="javascript']),
        ('<img src=x onerror="alert(1)">', ["&lt;img"], ["<img"]),
        ("[ok](https://example.org)", ['href="https://example.org"', 'rel="noopener noreferrer"'], []),
    ],
)
def test_instructions_markdown_is_sanitised(text, present, absent):
    html = markdown_html(text)
    for fragment in present:
        assert fragment in html
    for fragment in absent:
        assert fragment not in html


def test_campaign_set_up_page_sets_the_allocation_and_its_knobs(client, researcher, project, dataset):
    url = reverse("campaign-new", args=[project.pk])
    client.force_login(researcher)
    page = client.get(url).content.decode()
    assert 'name="allocation"' in page and "Overlap first" in page and 'name="adaptive_alpha"' in page
    data = {
        "dataset": dataset.pk,
        "protocol": "likert",
        "redundancy": 2,
        "units_per_batch": 5,
        "pair_rounds": 0,
        "assignment_timeout_minutes": 30,
        "criteria-TOTAL_FORMS": 1,
        "criteria-INITIAL_FORMS": 0,
        "criteria-MIN_NUM_FORMS": 1,
        "criteria-MAX_NUM_FORMS": 20,
        "criteria-0-name": "fluency",
        "criteria-0-scale_min": 1,
        "criteria-0-scale_max": 5,
    }
    client.post(
        url,
        {
            **data,
            "name": "adaptive one",
            "allocation": "adaptive",
            "adaptive_alpha": "0.1",
            "adaptive_check_every": "7",
        },
    )
    campaign = Campaign.objects.get(name="adaptive one")
    assert campaign.allocation == "adaptive"
    assert campaign.allocation_params == {
        "min_per_system": 10,
        "alpha": 0.1,
        "stable_checks": 3,
        "check_every": 7,
        "certainty": 0.9,
    }  # the knobs left empty: AdaptiveParams' defaults
    detail = client.get(reverse("campaign-detail", args=[campaign.pk])).content.decode()
    assert "Adaptive: after a cold start" in detail and "check_every 7" in detail
    client.post(url, {**data, "name": "spread one", "allocation": "spread", "adaptive_alpha": "0.1"})
    assert Campaign.objects.get(name="spread one").allocation == "spread"  # knobs ignored for other policies
    client.post(url, {**data, "name": "default one"})
    assert Campaign.objects.get(name="default one").allocation == "overlap-first"
    bad = client.post(url, {**data, "name": "bad", "allocation": "greedy"})
    assert "greedy is not one of the available choices" in bad.content.decode()
    assert not Campaign.objects.filter(name="bad").exists()


def test_the_batch_strip_sent_with_the_next_unit_is_the_one_annotator_batch_reads(
    client, annotator, dataset, monkeypatch
):
    """The page's submit hands out the next unit in its own transaction and reads the unit's batch
    with its INSERT (`current_batch`, no statement of its own): the strip it sends must be the one
    `annotator_batch` reads once the unit is out, through the ends of batches (2 units a batch)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from annotations.models import Enrolment
    from annotations.services import assignments as engine
    from annotations.views.annotate import unit_json

    monkeypatch.setattr(engine, "EXPIRE_EVERY_S", 3600.0)  # the periodic expiry leaves the pick to a fetch
    campaign = campaign_create(
        dataset=dataset,
        name="Batches",
        protocol="likert",
        criteria=["fluency"],
        scale_min=1,
        scale_max=5,
        redundancy=1,
        units_per_batch=2,
    )
    client.force_login(annotator)
    client.post(reverse("annotate-campaign", args=[campaign.pk]))
    assignment = Assignment.objects.get(annotator__user=annotator, status="pending")
    url, handles = reverse("annotate-submit", args=[assignment.pk]), None
    handles = [output_handle(assignment.pk, i) for i in assignment.shown_order]
    strips = []
    for _ in range(4):  # five units: four come with a submit's answer
        with CaptureQueriesContext(connection) as queries:
            answer = client.post(
                url,
                json.dumps(
                    {"judgements": [{"criterion": "fluency", "output": handles[0], "score": 3}], "shown_order": handles}
                ),
                content_type="application/json",
            ).json()
        assert not [q for q in queries.captured_queries if q["sql"].startswith("WITH d AS")]  # no batch read
        unit = answer["unit"]
        following = Assignment.objects.select_related("unit", "annotator").get(
            annotator__user=annotator, status="pending"
        )
        enrolment = Enrolment.objects.get(campaign=campaign, annotator=following.annotator)
        expected = unit_json(
            campaign=Campaign.objects.get(pk=campaign.pk),
            assignment=following,
            annotator=following.annotator,
            enrolment=enrolment,
            staff=False,
        )["batch"]
        assert unit["batch"] == expected
        strips.append([slot["state"] for slot in unit["batch"]["slots"]])
        url, handles = unit["config"]["submit_url"], unit["config"]["shown_order"]
    assert strips == [["done", "pending"], ["pending", "todo"], ["done", "pending"], ["pending", "todo"]]
