"""Campaign option context=document (issue 41): a document unit comes in ONE request (the API's
next-assignment, the annotate page) with its segments in order; its submit stores one judgement per
segment's output, of that segment's item, with the score that was entered; the page renders every
segment with its own answer widget; create_campaign, the set-up page and campaign.json carry it."""

import json
import re
from io import StringIO

import pytest
from django.core.management import call_command
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotations.models import Campaign, Item, Membership, SpanJudgement
from annotations.services.campaigns import campaign_create
from tests.annotations.factories import (
    DatasetFactory,
    MembershipFactory,
    SystemFactory,
    UserFactory,
    document_items,
)

pytestmark = pytest.mark.django_db

SEGMENTS = 5
SOURCE = re.compile(r"^talk (\d+)$")


@pytest.fixture
def talk():
    dataset = DatasetFactory()
    systems = [SystemFactory(dataset=dataset, name=n) for n in ("alpha", "beta", "gamma")]
    # Imported out of order (the default): the document's order is doc_pos.
    sources = [f"talk {k}" for k in range(SEGMENTS)]
    document_items(dataset, systems, "talk", sources, text="{system} says {k}", reference="reference {k}")
    user = UserFactory(username="ann")
    MembershipFactory(project=dataset.project, user=user, role=Membership.Role.ANNOTATOR)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return dataset, client, user


def _campaign(dataset, protocol="esa", **options):
    return campaign_create(
        dataset=dataset,
        name=f"{protocol}-document",
        protocol=protocol,
        criteria=["quality"],
        redundancy=1,
        units_per_batch=50,
        show_reference=True,
        options={"context": "document", **options},
    )


def test_a_document_unit_is_fetched_in_one_request_and_stores_per_segment_judgements(talk):
    dataset, client, _ = talk
    campaign = _campaign(dataset, doc_max_segments=3)  # 5 segments: parts of 3 and 2
    seen_segments = []
    while True:
        response = client.post(f"/api/campaigns/{campaign.pk}/next-assignment/")
        if response.status_code == 204:
            break
        body = response.json()
        document = body["document"]
        sources = [int(SOURCE.match(s["source"]).group(1)) for s in document]
        assert sources == list(range(sources[0], sources[0] + len(sources)))  # in document order
        texts = {o["id"]: o["text"] for o in body["item"]["outputs"]}
        system = texts[document[0]["outputs"][0]].split(" ")[0]
        for segment, k in zip(document, sources):
            assert segment["references"] == [f"reference {k}"]
            # One output per segment (ESA: one system), a handle, never an id or a system's name key.
            assert [texts[h] for h in segment["outputs"]] == [f"{system} says {k}"]
        assert body["shown_order"] == [h for s in document for h in s["outputs"]]
        # Scores differ per segment: each is stored on its own segment.
        answers = [
            {
                "criterion": "quality",
                "output": s["outputs"][0],
                "score": float(10 * k + 3),
                "spans": [{"start": 0, "end": len(system), "severity": "minor"}] if k == 1 else [],
            }
            for s, k in zip(document, sources)
        ]
        answered = client.post(
            f"/api/assignments/{body['id']}/submit/",
            {"judgements": answers, "shown_order": body["shown_order"]},
            format="json",
        )
        assert answered.status_code == 201, answered.json()
        seen_segments.append((system, sources))
    assert sorted(len(s) for _, s in seen_segments) == [2, 2, 2, 3, 3, 3]
    judgements = SpanJudgement.objects.filter(campaign=campaign).select_related("output__item", "output__system")
    assert judgements.count() == 3 * SEGMENTS
    for j in judgements:
        k = int(SOURCE.match(j.output.item.source).group(1))
        # The judgement is its segment's (the output's item), with the score entered for it ...
        assert j.item_id == j.output.item_id
        assert j.score == 10 * k + 3
        # ... shown with its segment's outputs (one here).
        assert j.shown_order == [j.output_id]
        assert [(s.start, s.end) for s in j.spans.all()] == ([(0, len(j.output.system.name))] if k == 1 else [])


def test_cesa_document_unit_judgements_are_per_segment_and_screen(talk):
    dataset, client, _ = talk
    campaign = _campaign(dataset, protocol="cesa", tuple_size=3)
    body = client.post(f"/api/campaigns/{campaign.pk}/next-assignment/").json()
    texts = {o["id"]: o["text"] for o in body["item"]["outputs"]}
    document = body["document"]
    assert len(document) == SEGMENTS
    orders = [[texts[h].split(" ")[0] for h in s["outputs"]] for s in document]
    # The three systems side by side in every segment, in the one order chosen for the screen.
    assert all(o == orders[0] for o in orders) and sorted(orders[0]) == ["alpha", "beta", "gamma"]
    entered = {}
    answers = []
    for k, segment in enumerate(document):
        for position, handle in enumerate(segment["outputs"]):
            entered[texts[handle]] = float(20 * position + k)
            answers.append({"criterion": "quality", "output": handle, "score": entered[texts[handle]], "spans": []})
    answered = client.post(
        f"/api/assignments/{body['id']}/submit/",
        {"judgements": answers, "shown_order": body["shown_order"]},
        format="json",
    )
    assert answered.status_code == 201, answered.json()
    for j in SpanJudgement.objects.filter(campaign=campaign).select_related("output"):
        assert j.score == entered[j.output.text] and j.item_id == j.output.item_id
        # shown_order: the segment's three outputs as shown (cESA's derived pairs are per segment).
        assert len(j.shown_order) == 3 and j.output_id in j.shown_order
        assert {Item.objects.get(outputs__id=o).pk for o in j.shown_order} == {j.item_id}


def test_the_page_renders_every_segment_with_its_own_widget(talk):
    dataset, _, user = talk
    campaign = _campaign(dataset, protocol="cesa", tuple_size=3)
    from django.test import Client

    client = Client()
    client.force_login(user)
    response = client.post(f"/annotate/campaigns/{campaign.pk}/")
    assert response.status_code == 302
    page = client.get(response["Location"]).content.decode()
    # Segments in document order, each with its source (own direction) and three scored cards.
    found = [
        int(k) for k in re.findall(r'<div class="text-block source-text doc-source" dir="auto">talk (\d+)</div>', page)
    ]
    assert found == list(range(SEGMENTS))
    assert page.count("data-span-card") == 3 * SEGMENTS
    assert page.count('type="range"') == 3 * SEGMENTS
    assert "Segment 1 of 5" in page and "Output 5C" in page
    ids = re.findall(r'\sid="([^"]+)"', page)
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    assert "alpha" not in page.replace("alpha says", "")  # no system name


def test_create_campaign_and_campaign_json_carry_document_mode(talk, tmp_path):
    dataset, _, _ = talk
    call_command(
        "create_campaign",
        "--dataset",
        dataset.name,
        "--name",
        "docs",
        "--protocol",
        "esa",
        "--criteria",
        "quality",
        "--context",
        "document",
        "--doc-max-segments",
        "2",
        stdout=StringIO(),
    )
    campaign = Campaign.objects.get(name="docs")
    assert (campaign.options["context"], campaign.options["doc_max_segments"]) == ("document", 2)
    assert campaign.units.count() == 3 * 3  # 5 segments at most 2: 2 + 2 + 1, for each system
    call_command("export_dataset", "--campaign", "docs", "--out", str(tmp_path / "out"), stdout=StringIO())
    config = json.loads((tmp_path / "out" / "campaign.json").read_text(encoding="utf-8"))
    assert (config["options"]["context"], config["options"]["doc_max_segments"]) == ("document", 2)
    assert "Document context: document: every segment of a document judged on one screen" in (
        tmp_path / "out" / "README.md"
    ).read_text(encoding="utf-8")
    call_command(
        "create_campaign", "--from", str(tmp_path / "out" / "campaign.json"), "--name", "again", stdout=StringIO()
    )
    assert Campaign.objects.get(name="again").units.count() == 9


def test_a_document_unit_is_drafted_and_revised_as_one_unit(talk):
    from django.test import Client
    from django.urls import reverse

    dataset, api, user = talk
    campaign = _campaign(dataset, doc_max_segments=5)
    client = Client()
    client.force_login(user)
    unit_page = client.get(client.post(f"/annotate/campaigns/{campaign.pk}/")["Location"]).content.decode()
    config = json.loads(
        re.search(r'<script id="unit-config" type="application/json">(.*?)</script>', unit_page).group(1)
    )
    handles = config["shown_order"]
    assert len(handles) == SEGMENTS
    # A draft of the whole document (every segment's score input), kept and given back on reload.
    draft = {"fields": {f"s-0-{h}": str(10 + k) for k, h in enumerate(handles)}, "touched": []}
    saved = client.post(
        reverse("annotate-draft", args=[config["assignment"]]),
        json.dumps({"draft": draft}),
        content_type="application/json",
    )
    assert saved.status_code in (200, 204)
    again = client.get(f"/annotate/campaigns/{campaign.pk}/unit/").content.decode()
    again_config = re.search(r'<script id="unit-config" type="application/json">(.*?)</script>', again).group(1)
    assert json.loads(again_config)["draft"] == draft
    # Submitted from the page (one POST), then revised: every segment keeps its own item.
    answers = [
        {"criterion": "quality", "output": h, "score": float(10 + k), "spans": []} for k, h in enumerate(handles)
    ]
    submitted = client.post(
        config["submit_url"],
        json.dumps({"judgements": answers, "shown_order": handles}),
        content_type="application/json",
    )
    assert submitted.status_code in (200, 201), submitted.content[:300]
    assignment = config["assignment"]
    revise_page = client.get(f"/annotate/assignments/{assignment}/revise/").content.decode()
    assert revise_page.count("doc-source") == SEGMENTS and "Segment 5 of 5" in revise_page
    items = dict(SpanJudgement.objects.filter(assignment_id=assignment).values_list("output_id", "item_id"))
    revised = [{**a, "score": a["score"] + 50} for a in answers]
    ok = client.post(
        reverse("api-assignment-revise", args=[assignment]),
        json.dumps({"judgements": revised}),
        content_type="application/json",
    )
    assert ok.status_code == 200, ok.content[:300]
    after = SpanJudgement.objects.filter(assignment_id=assignment).select_related("output__item")
    assert dict(after.values_list("output_id", "item_id")) == items
    for j in after:
        assert j.item_id == j.output.item_id
        assert j.score == 60 + int(SOURCE.match(j.output.item.source).group(1))


def test_a_likert_document_page_names_each_segment_s_scale(talk):
    from django.test import Client

    dataset, _, user = talk
    campaign = campaign_create(
        dataset=dataset,
        name="likert-document",
        protocol="likert",
        criteria=["quality"],
        scale_min=1,
        scale_max=5,
        redundancy=1,
        options={"context": "document"},
    )
    client = Client()
    client.force_login(user)
    page = client.get(client.post(f"/annotate/campaigns/{campaign.pk}/")["Location"]).content.decode()
    for k in range(1, SEGMENTS + 1):
        assert f'aria-label="quality: segment {k}"' in page and f"Output of segment {k}<" in page
    assert page.count('role="radiogroup"') == SEGMENTS
    ids = re.findall(r'\sid="([^"]+)"', page)
    assert len(ids) == len(set(ids))
