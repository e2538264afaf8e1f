"""Uploading a dataset file through the API."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotations.models import Dataset, Item, Output, Reference, System

GOOD = "\n".join(
    json.dumps(line)
    for line in [
        {
            "item": "e2e-1",
            "source": "name[Blue Spice]",
            "data": [["Blue Spice", "eatType", "pub"]],
            "references": ["Blue Spice is a pub."],
            "outputs": {"sysA": "A pub.", "sysB": "Blue Spice pub."},
        },
        {"item": "e2e-2", "source": "name[Zizzi]", "references": ["Zizzi."], "outputs": {"sysA": "Zizzi!"}},
    ]
).encode()


def _upload(client, project, content, name="uploaded", filename="data.jsonl", **extra):
    body = {"project": project.pk, "name": name, "file": SimpleUploadedFile(filename, content), **extra}
    return client.post("/api/datasets/", body, format="multipart")


def _counts():
    return (
        Dataset.objects.count(),
        Item.objects.count(),
        Reference.objects.count(),
        System.objects.count(),
        Output.objects.count(),
    )


def test_researcher_imports_jsonl(world):
    response = _upload(world.client("researcher"), world.mine.project, GOOD)
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["items"], body["outputs"], body["created"], body["unchanged"]) == (2, 3, True, False)
    dataset = Dataset.objects.get(pk=body["dataset"]["id"])
    assert dataset.project == world.mine.project and dataset.name == "uploaded"
    assert list(dataset.items.values_list("external_id", flat=True)) == ["e2e-1", "e2e-2"]
    item = dataset.items.get(external_id="e2e-1")
    assert item.data == [["Blue Spice", "eatType", "pub"]]
    assert sorted(item.outputs.values_list("system__name", "text")) == [("sysA", "A pub."), ("sysB", "Blue Spice pub.")]
    # The same file again: nothing changes, 200.
    again = _upload(world.client("owner"), world.mine.project, GOOD)
    assert again.status_code == 200 and again.json()["unchanged"] is True


def test_owner_imports_csv(world):
    csv = b"item,source,reference,output:sysA\nx1,the source,the ref,the output\n"
    response = _upload(world.client("owner"), world.mine.project, csv, filename="d.csv", format="csv")
    assert response.status_code == 201, response.content
    assert Output.objects.get(item__dataset__name="uploaded").text == "the output"


def test_bad_file_is_400_with_line_errors_and_writes_nothing(world):
    bad = b"\n".join(
        [
            json.dumps({"item": "ok-1", "outputs": {"s": "fine"}}).encode(),
            b"{not json",
            json.dumps({"item": "ok-2", "output": {"s": "typo key"}}).encode(),
            json.dumps({"item": "ok-1"}).encode(),
        ]
    )
    before = _counts()
    response = _upload(world.client("researcher"), world.mine.project, bad)
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert [e.split(":")[0] for e in errors] == ["line 2", "line 3", "line 4"], errors
    assert all(e.startswith("line ") and len(e.split(": ", 1)[1]) > 0 for e in errors)
    assert _counts() == before


def test_import_into_existing_dataset_that_conflicts_writes_nothing(world):
    # "mine-data" holds mine-item-0 with another source: a conflict on line 1.
    content = json.dumps({"item": "mine-item-0", "source": "changed", "outputs": {"new": "x"}}).encode()
    before = _counts()
    response = _upload(world.client("owner"), world.mine.project, content, name="mine-data")
    assert response.status_code == 400
    assert response.json()["errors"][0].startswith("line 1: ")
    assert _counts() == before


def test_dataset_name_of_another_project_is_refused_without_naming_it(world):
    response = _upload(world.client("owner"), world.mine.project, GOOD, name="other-data")
    assert response.status_code == 400
    assert "other" not in json.dumps(response.json()).replace("another", "")
    assert not Item.objects.filter(external_id="e2e-1").exists()


@pytest.mark.parametrize("role,status", [("annotator", 404), ("outsider", 404), ("anonymous", 401)])
def test_only_staff_of_the_project_import(world, role, status):
    before = _counts()
    assert _upload(world.client(role), world.mine.project, GOOD).status_code == status
    assert _counts() == before


def test_upload_needs_a_file_and_a_name(world):
    client = world.client("owner")
    assert (
        client.post("/api/datasets/", {"project": world.mine.project.pk, "name": "n"}, format="multipart").status_code
        == 400
    )
    assert _upload(client, world.mine.project, b"", name="empty").status_code == 400
    assert _upload(client, world.mine.project, GOOD, format="xml").status_code == 400
