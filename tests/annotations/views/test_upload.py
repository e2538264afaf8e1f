"""The upload form: staff only, all-or-nothing, every line error on the page."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotations.models import Dataset, Item, Output, Reference, System
from tests.annotations.factories import DatasetFactory, ProjectFactory

pytestmark = pytest.mark.django_db

GOOD_ROWS = [
    {
        "item": "a1",
        "source": "Hallo Welt.",
        "references": ["Hello world."],
        "outputs": {"s1": "Hello world.", "s2": "Hi world."},
    },
    {"item": "a2", "source": "Wie geht's?", "references": ["How are you?"], "outputs": {"s1": "How is it going?"}},
]


def _jsonl(rows) -> bytes:
    return "".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows).encode()


def _counts() -> tuple[int, ...]:
    return tuple(m.objects.count() for m in (Dataset, Item, Reference, System, Output))


def _post(client, project, *, content: bytes, name="uploaded", filename="data.jsonl", fmt="auto"):
    return client.post(
        reverse("dataset-upload"),
        {"file": SimpleUploadedFile(filename, content), "dataset_name": name, "project": project.pk, "format": fmt},
    )


def test_good_jsonl_upload_redirects_with_counts(client, researcher, project):
    client.force_login(researcher)
    response = _post(client, project, content=_jsonl(GOOD_ROWS))
    dataset = Dataset.objects.get(name="uploaded")
    assert response.status_code == 302
    assert response["Location"] == reverse("dataset-detail", args=[dataset.pk])
    assert dataset.project == project
    assert dataset.items.count() == 2
    assert Output.objects.filter(item__dataset=dataset).count() == 3
    page = client.get(response["Location"]).content.decode()
    assert "Created dataset uploaded: 2 items, 3 outputs." in page


def test_same_file_again_says_nothing_changed(client, owner, project):
    client.force_login(owner)
    _post(client, project, content=_jsonl(GOOD_ROWS))
    before = _counts()
    response = _post(client, project, content=_jsonl(GOOD_ROWS))
    assert response.status_code == 302
    assert "nothing changed" in client.get(response["Location"]).content.decode()
    assert _counts() == before


def test_bad_file_lists_every_line_error_and_writes_nothing(client, researcher, project):
    DatasetFactory(project=project, name="existing")
    before = _counts()
    rows = [
        GOOD_ROWS[0],
        "{broken json",
        {"source": "no id"},
        GOOD_ROWS[1],
        {"item": "a5", "outputs": ["not", "a", "map"]},
    ]
    client.force_login(researcher)
    response = _post(client, project, content=_jsonl(rows))
    assert response.status_code == 400
    html = response.content.decode()
    listed = [line for line in ("line 2:", "line 3:", "line 5:") if line in html]
    assert listed == ["line 2:", "line 3:", "line 5:"]
    assert "line 1:" not in html and "line 4:" not in html
    assert "Nothing was imported: 3 problems" in html
    assert _counts() == before


def test_bad_csv_upload_is_rejected_without_writing(client, researcher, project):
    before = _counts()
    client.force_login(researcher)
    response = _post(client, project, content=b"\xff\xfe not utf-8 \xff\n", filename="data.csv", fmt="csv")
    assert response.status_code == 400
    assert "Nothing was imported" in response.content.decode()
    assert _counts() == before


def test_annotator_cannot_upload(client, annotator, project):
    client.force_login(annotator)
    before = _counts()
    response = _post(client, project, content=_jsonl(GOOD_ROWS))
    assert response.status_code == 404  # annotators are confined to their units
    assert _counts() == before


def test_researcher_cannot_upload_into_a_project_where_they_only_annotate(client, researcher, project, annotator):
    from annotations.models import Membership
    from tests.annotations.factories import MembershipFactory

    elsewhere = ProjectFactory(name="Elsewhere")
    MembershipFactory(project=elsewhere, user=researcher, role=Membership.Role.ANNOTATOR)
    client.force_login(researcher)
    before = _counts()
    response = _post(client, elsewhere, content=_jsonl(GOOD_ROWS))
    assert response.status_code == 400  # not a valid choice of project
    assert "Select a valid choice" in response.content.decode()
    assert _counts() == before


def test_dataset_name_of_another_project_is_refused(client, researcher, project):
    DatasetFactory(project=ProjectFactory(name="Secret"), name="taken")
    client.force_login(researcher)
    before = _counts()
    response = _post(client, project, content=_jsonl(GOOD_ROWS), name="taken")
    html = response.content.decode()
    assert response.status_code == 400
    assert "taken by a dataset in another project" in html
    assert "Secret" not in html
    assert _counts() == before


def test_form_errors_without_a_file(client, researcher, project):
    client.force_login(researcher)
    response = client.post(reverse("dataset-upload"), {"dataset_name": "x", "project": project.pk, "format": "auto"})
    assert response.status_code == 400
    assert "This field is required." in response.content.decode()
