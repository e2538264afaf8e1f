"""Issue 46, items 1 and 8: systems capped per dataset and per campaign, the New campaign page
linear in systems, item ids without control characters. Each test fails on the code before."""

import json
import logging
import sys

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.test import Client
from django.urls import reverse

from annotations.models import Membership, System
from annotations.services.campaigns import campaign_create
from annotations.services.imports import ImportFailed, dataset_import
from tests.annotations.factories import DatasetFactory, MembershipFactory

pytestmark = pytest.mark.django_db


def _line(item: str, systems: int, prefix: str = "s") -> bytes:
    outputs = {f"{prefix}{i}": f"text {i}" for i in range(systems)}
    return (json.dumps({"item": item, "source": "src", "outputs": outputs}) + "\n").encode()


def test_import_refuses_more_systems_than_the_dataset_cap(settings):
    settings.WORKBENCH_DATASET_MAX_SYSTEMS = 5
    with pytest.raises(ImportFailed) as failed:
        dataset_import(stream=_line("a", 3) + _line("b", 6), dataset_name="capped")
    assert [(e.line, "WORKBENCH_DATASET_MAX_SYSTEMS" in e.reason) for e in failed.value.errors] == [(2, True)]
    assert not System.objects.exists()


def test_import_counts_stored_systems_against_the_cap(settings):
    settings.WORKBENCH_DATASET_MAX_SYSTEMS = 5
    dataset_import(stream=_line("a", 4), dataset_name="capped")
    with pytest.raises(ImportFailed) as failed:
        dataset_import(stream=_line("b", 2, prefix="t"), dataset_name="capped")
    assert failed.value.errors[0].line == 1 and "4 stored" in failed.value.errors[0].reason
    # Repeating stored systems adds none: still accepted.
    dataset_import(stream=_line("c", 4), dataset_name="capped")
    assert System.objects.count() == 4


def test_default_caps_fit_the_demo_and_examples(settings):
    from django.conf import settings as live

    assert live.WORKBENCH_DATASET_MAX_SYSTEMS >= 500 and live.WORKBENCH_CAMPAIGN_MAX_SYSTEMS >= 100


def test_campaign_refuses_more_systems_than_its_cap(settings):
    settings.WORKBENCH_CAMPAIGN_MAX_SYSTEMS = 3
    dataset = dataset_import(stream=_line("a", 4), dataset_name="four").dataset
    with pytest.raises(ValidationError) as refused:
        campaign_create(dataset=dataset, name="all", protocol="likert", criteria=["q"], scale_min=1, scale_max=5)
    assert "WORKBENCH_CAMPAIGN_MAX_SYSTEMS" in str(refused.value)
    campaign = campaign_create(
        dataset=dataset,
        name="three",
        protocol="likert",
        criteria=["q"],
        scale_min=1,
        scale_max=5,
        systems=["s0", "s1", "s2"],
    )
    assert campaign.systems.count() == 3


def _page_calls(client: Client, url: str) -> int:
    """Python function calls made while the page renders (work, not time)."""
    calls = 0

    def count(frame, event, arg):
        nonlocal calls
        if event == "call":
            calls += 1

    sys.setprofile(count)
    try:
        response = client.get(url)
    finally:
        sys.setprofile(None)
    assert response.status_code == 200
    return calls


def test_new_campaign_page_work_grows_linearly_with_systems():
    # The page used to loop over every system for each system's checkbox: 4x the work at twice
    # the systems. Totals of 100, 200 and 400 systems: linear, the second step costs about twice
    # the first (quadratic: four times).
    membership = MembershipFactory(role=Membership.Role.OWNER)
    client = Client()
    client.force_login(membership.user)
    url = f"/projects/{membership.project.pk}/campaigns/new/"
    _page_calls(client, url)  # templates loaded and compiled once, outside the counts
    counts = []
    for step, added in enumerate((100, 100, 200)):
        dataset = DatasetFactory(project=membership.project, name=f"d{step}")
        System.objects.bulk_create(System(dataset=dataset, name=f"sys{i}") for i in range(added))
        counts.append(_page_calls(client, url))
    first, second = counts[1] - counts[0], counts[2] - counts[1]
    assert second <= 3 * first, counts


def test_new_campaign_page_marks_each_system_with_its_dataset():
    membership = MembershipFactory(role=Membership.Role.OWNER)
    client = Client()
    client.force_login(membership.user)
    dataset = DatasetFactory(project=membership.project)
    system = System.objects.create(dataset=dataset, name="only")
    page = client.get(f"/projects/{membership.project.pk}/campaigns/new/").content.decode()
    assert f'<li data-dataset="{dataset.pk}"><input type="checkbox" name="systems" value="{system.pk}"' in page


@pytest.mark.parametrize("char", ["\t", "\n", "\x07", "\x85"])
def test_item_ids_with_control_characters_are_refused(char):
    line = json.dumps({"item": f"t{char}1", "outputs": {"A": "x"}}).encode() + b"\n"
    with pytest.raises(ImportFailed) as failed:
        dataset_import(stream=b'{"item": "ok"}\n' + line, dataset_name="ctl")
    error = failed.value.errors[0]
    assert error.line == 2 and "item contains a control character" in error.reason


def test_static_files_do_not_allow_every_origin(settings):
    settings.WHITENOISE_USE_FINDERS = True  # serve the source folders through WhiteNoise
    response = Client().get("/static/js/analysis.js")
    assert response.status_code == 200
    assert response["Cross-Origin-Resource-Policy"] == "same-origin"
    assert "Access-Control-Allow-Origin" not in response


def test_a_page_403_logs_one_line_without_traceback(caplog):
    # A researcher who owns no project may not create one (WORKBENCH_PROJECT_CREATORS "owners").
    staff = MembershipFactory(role=Membership.Role.RESEARCHER)
    client = Client(raise_request_exception=False)
    client.force_login(staff.user)
    with caplog.at_level(logging.WARNING, logger="django.request"):
        response = client.post(reverse("project-list"), {"name": "mine"})
    assert response.status_code == 403
    records = [r for r in caplog.records if r.name == "django.request"]
    assert records and all(r.exc_info is None for r in records)
    assert "Traceback" not in caplog.text


@pytest.mark.django_db(transaction=True)
def test_a_database_outage_answers_503_with_retry_after(caplog):
    membership = MembershipFactory(role=Membership.Role.OWNER)
    client = Client(raise_request_exception=False)
    client.force_login(membership.user)
    api = Client(raise_request_exception=False)
    api.force_login(membership.user)
    # The request's connection points at a port where no database listens (the shared server
    # keeps running for everyone else); restored before the test's teardown.
    saved = dict(connection.settings_dict)
    connection.close()
    connection.settings_dict.update(HOST="127.0.0.1", PORT="1")
    try:
        with caplog.at_level(logging.WARNING, logger="django.request"):
            page = client.get(f"/projects/{membership.project.pk}/")
            answer = api.get("/api/projects/")
    finally:
        connection.close()
        connection.settings_dict.clear()
        connection.settings_dict.update(saved)
    assert page.status_code == 503 and page["Retry-After"].isdigit()
    assert b"try again" in page.content and b"Traceback" not in page.content
    assert answer.status_code == 503 and answer["Retry-After"].isdigit() and "detail" in answer.json()
    assert "Traceback" not in caplog.text
    # And once the database answers again, so does the page.
    assert client.get(f"/projects/{membership.project.pk}/").status_code == 200
