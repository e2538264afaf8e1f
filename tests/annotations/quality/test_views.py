"""The annotation page of a control unit has the same structure as any other; the
quality page and its forms are for researchers."""

import json
import re
from html.parser import HTMLParser

import pytest
from django.test import Client

from annotations.models import Assignment, Membership
from annotations.models.quality import AnnotatorDecision, ControlUnit
from annotations.quality.services import quality_settings_update
from tests.annotations.factories import (
    CampaignFactory,
    ItemFactory,
    MembershipFactory,
    OutputFactory,
    ProjectFactory,
    SystemFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


class Skeleton(HTMLParser):
    """Tags, classes and attribute names in document order: the page without its texts and ids."""

    def __init__(self):
        super().__init__()
        self.parts = []

    def handle_starttag(self, tag, attrs):
        names = sorted(k for k, _ in attrs)
        classes = dict(attrs).get("class") or ""
        self.parts.append(f"<{tag} {classes} {' '.join(names)}>")

    def handle_endtag(self, tag):
        self.parts.append(f"</{tag}>")


def skeleton(html: str) -> list[str]:
    parser = Skeleton()
    parser.feed(html)
    return parser.parts


def config_shape(html: str):
    found = re.search(r'<script id="unit-config" type="application/json">(.*?)</script>', html, re.S)
    config = json.loads(found.group(1))

    def shape(v):
        if isinstance(v, dict):
            return {k: shape(x) for k, x in sorted(v.items())}
        if isinstance(v, list):
            return [shape(x) for x in v[:1]]
        return type(v).__name__

    return shape(config)


@pytest.fixture
def world():
    project = ProjectFactory()
    annotator, researcher = UserFactory(username="page-ann"), UserFactory(username="page-res")
    MembershipFactory(project=project, user=annotator, role=Membership.Role.ANNOTATOR)
    MembershipFactory(project=project, user=researcher, role=Membership.Role.RESEARCHER)
    campaign = CampaignFactory(
        dataset__project=project,
        protocol="likert",
        criteria=["quality"],
        scale_min=1,
        scale_max=5,
        redundancy=1,
        units_per_batch=4,
    )
    systems = [SystemFactory(dataset=campaign.dataset) for _ in range(2)]
    for i in range(6):
        # Fixed texts: the control-page test looks for words such as "control" in the page, which
        # Faker's random sentences sometimes contain ("control house baby half." failed a CI run).
        item = ItemFactory(dataset=campaign.dataset, source=f"The input sentence number {i}.")
        for j, system in enumerate(systems):
            OutputFactory(item=item, system=system, text=f"The output number {i} of system {j} reads well enough.")
    quality_settings_update(campaign=campaign, degraded_share=0.25, repeat_share=0.25)
    clients = {}
    for name, user in (("annotator", annotator), ("researcher", researcher)):
        clients[name] = Client()
        clients[name].force_login(user)
    return campaign, clients


def test_control_pages_have_the_structure_of_any_page(world):
    campaign, clients = world
    client = clients["annotator"]
    pages = []
    for _ in range(20):
        page = client.post(f"/annotate/campaigns/{campaign.pk}/", follow=True)
        html = page.content.decode()
        if 'id="unit-config"' not in html:
            break
        assignment = Assignment.objects.filter(campaign=campaign, status="pending").get()
        pages.append((assignment.unit.kind, html))
        config = json.loads(
            re.search(r'<script id="unit-config" type="application/json">(.*?)</script>', html, re.S).group(1)
        )
        sent = client.post(
            config["submit_url"],
            json.dumps(
                {
                    "judgements": [{"criterion": "quality", "output": config["outputs"][0]["id"], "score": 3}],
                    "shown_order": config["shown_order"],
                    "time_spent_ms": 2000,
                }
            ),
            content_type="application/json",
        )
        assert sent.status_code == 201
    else:
        # The last answer handed out the next unit already (it comes with the answer): see it too.
        pending = Assignment.objects.filter(campaign=campaign, status="pending").first()
        if pending is not None:
            pages.append((pending.unit.kind, client.get(f"/annotate/campaigns/{campaign.pk}/unit/").content.decode()))
    kinds = {kind for kind, _ in pages}
    assert {"regular", "degraded", "repeat"} <= kinds
    regular = [html for kind, html in pages if kind == "regular"]
    controls = [html for kind, html in pages if kind != "regular"]
    # The batch strip (units done so far in the batch) shapes the page by its position in the batch,
    # so pages are compared with the pages at the same position, regular and control alike.
    size = campaign.units_per_batch
    mixed = 0
    for position in range(size):
        same = [(kind, html) for index, (kind, html) in enumerate(pages) if index % size == position]
        mixed += len({kind == "regular" for kind, _ in same}) == 2
        for _, html in same:
            assert skeleton(html) == skeleton(same[0][1])
    assert mixed  # some position of the batch had a regular and a control page to compare
    for html in regular + controls:
        assert config_shape(html) == config_shape(regular[0])
        for word in ("degraded", "repeat", "control", "gold", "tutorial"):
            assert word not in html.lower().replace("workbench-draft", "")
    # The damaged text is what the control page shows.
    for control in ControlUnit.objects.filter(kind="degraded"):
        (entry,) = control.aliases.values()
        assert any(entry["text"] in html for html in controls)


def test_quality_page_and_forms_are_for_researchers(world):
    campaign, clients = world
    clients["annotator"].post(f"/annotate/campaigns/{campaign.pk}/")
    url = f"/campaigns/{campaign.pk}/quality/"
    assert clients["annotator"].get(url).status_code == 404  # confined to their units
    assert (
        clients["annotator"].post(url + "decide/", {"annotator": 1, "included": "exclude", "reason": "x"}).status_code
        == 404
    )
    page = clients["researcher"].get(url)
    assert page.status_code == 200 and "page-ann" in page.content.decode()
    annotator = Assignment.objects.filter(campaign=campaign).first().annotator
    done = clients["researcher"].post(
        url + "decide/", {"annotator": annotator.pk, "included": "exclude", "reason": "<b>spammer</b>"}, follow=True
    )
    assert AnnotatorDecision.objects.get().included is False
    html = done.content.decode()
    assert "&lt;b&gt;spammer&lt;/b&gt;" in html and "<b>spammer</b>" not in html
    bad = clients["researcher"].post(
        url + "settings/",
        {"degraded_share": "7", "repeat_share": "0", "degrade_strength": "0.3", "min_degraded": "5"},
        follow=True,
    )
    assert "Ensure this value is less than or equal to 0.5" in bad.content.decode()
    gold = clients["researcher"].post(
        url + "gold/", {"item": "nope", "systems": "x", "expected": "{}", "mode": "silent"}, follow=True
    )
    assert "unknown item" in gold.content.decode()
    csv = clients["researcher"].get(f"/campaigns/{campaign.pk}/quality/codes.csv")
    assert csv["Content-Type"].startswith("text/csv")


@pytest.mark.parametrize(
    "line, reason",
    [
        ('{"item": "x", "item": "y", "systems": [], "expected": {}}', "duplicate key 'item'"),
        ('{"item": "x", "systems": [], "expected": {"min": NaN}}', "NaN is not allowed"),
        ('{"item": "x", "systems": [], "expected": {"min": %s}}' % ("9" * 400), "out of range"),
        ('{"item": "\\ud800", "systems": [], "expected": {}}', "lone surrogate"),
        ('{"item": "x", "systems": [], "expected": ' + "[" * 5000 + "]" * 5000 + "}", "nested"),
    ],
)
def test_gold_file_with_bad_json_is_a_400_with_the_line(world, line, reason):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from annotations.models.quality import GoldUnit

    campaign, clients = world
    upload = SimpleUploadedFile("gold.jsonl", ("\n" + line + "\n").encode("utf-8", "surrogatepass"))
    response = clients["researcher"].post(f"/campaigns/{campaign.pk}/quality/gold/", {"file": upload})
    assert response.status_code == 400
    html = response.content.decode()
    assert "line 2: not JSON" in html and reason.replace("'", "&#x27;") in html
    assert not GoldUnit.objects.exists()


@pytest.mark.parametrize(
    "expected, reason",
    [
        ('{"min": 1, "min": 2}', "duplicate key"),
        ("NaN", "NaN is not allowed"),
        ("1" * 400, "out of range"),
        ('"\\udfff"', "lone surrogate"),
        ("[" * 1000 + "]" * 1000, "nested"),
    ],
)
def test_gold_form_with_bad_json_is_a_400_with_the_reason(world, expected, reason):
    from annotations.models.quality import GoldUnit

    campaign, clients = world
    response = clients["researcher"].post(
        f"/campaigns/{campaign.pk}/quality/gold/",
        {"item": "nope", "systems": "x", "expected": expected, "mode": "silent"},
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert "The expected answer is not JSON" in html and reason in html
    assert not GoldUnit.objects.exists()
