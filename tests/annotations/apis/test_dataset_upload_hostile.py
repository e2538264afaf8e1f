"""Uploading hostile dataset files through the API: a 400 whose `errors` says `line N: reason`."""

from django.core.files.uploadedfile import SimpleUploadedFile

from tests.annotations.hostile import CSV_META_1E999, DATASET_LINES, GOOD_LINE
from tests.annotations.services.dbstate import table_counts


def test_hostile_lines_are_a_400_with_line_errors(world):
    client = world.client("researcher")
    content = GOOD_LINE + b"\n" + b"\n".join(line for line, _ in DATASET_LINES.values()) + b"\n"
    before = table_counts()
    for name in ("uploaded", "mine-data"):  # a new dataset, and an existing one
        response = client.post(
            "/api/datasets/",
            {"project": world.mine.project.pk, "name": name, "file": SimpleUploadedFile("d.jsonl", content)},
            format="multipart",
        )
        assert response.status_code == 400, response.content
        errors = response.json()["errors"]
        assert len(errors) == len(DATASET_LINES)
        for number, ((_, reason), error) in enumerate(zip(DATASET_LINES.values(), errors), 2):
            assert error.startswith(f"line {number}: ") and reason in error, error
    csv = client.post(
        "/api/datasets/",
        {"project": world.mine.project.pk, "name": "c", "file": SimpleUploadedFile("d.csv", CSV_META_1E999)},
        format="multipart",
    )
    assert csv.status_code == 400 and "1e999 is out of range" in csv.json()["errors"][0]
    assert table_counts() == before
