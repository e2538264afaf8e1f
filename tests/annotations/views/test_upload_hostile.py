"""The upload form on hostile files: every line error on the page, a 400, nothing written;
and the uploaded file reaches the importer from disk, never from memory."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotations.services import import_jobs
from tests.annotations.hostile import CSV_META_1E999, DATASET_LINES, GOOD_LINE
from tests.annotations.services.dbstate import table_counts

pytestmark = pytest.mark.django_db


def _post(client, project, content, filename="data.jsonl", name="uploaded"):
    return client.post(
        reverse("dataset-upload"),
        {"file": SimpleUploadedFile(filename, content), "dataset_name": name, "project": project.pk, "format": "auto"},
    )


def test_hostile_lines_are_listed_as_line_errors(client, researcher, project):
    client.force_login(researcher)
    content = GOOD_LINE + b"\n" + b"\n".join(line for line, _ in DATASET_LINES.values()) + b"\n"
    before = table_counts()
    response = _post(client, project, content)
    html = response.content.decode()
    assert response.status_code == 400
    assert f"Nothing was imported: {len(DATASET_LINES)} problems" in html
    for number, (_, reason) in enumerate(DATASET_LINES.values(), 2):
        assert f"line {number}: " in html
        assert reason.replace("'", "&#x27;") in html, reason
    csv = _post(client, project, CSV_META_1E999, filename="d.csv")
    assert (
        csv.status_code == 400
        and "line 2: column meta: invalid JSON: number 1e999 is out of range" in csv.content.decode()
    )
    assert table_counts() == before


def test_the_upload_reaches_the_importer_as_a_file_on_disk(client, researcher, project, monkeypatch):
    seen = []
    real = import_jobs.dataset_import

    def spy(*, stream, **kwargs):
        seen.append(stream)
        return real(stream=stream, **kwargs)

    monkeypatch.setattr(import_jobs, "dataset_import", spy)
    client.force_login(researcher)
    assert _post(client, project, GOOD_LINE).status_code == 302
    assert len(seen) == 1 and hasattr(seen[0], "temporary_file_path")  # streamed to a temporary file


def test_a_project_parameter_that_is_no_id_is_a_404(client, researcher, project):
    client.force_login(researcher)
    for value in ("abc", "9" * 30, "-1", "１"):
        assert client.get(reverse("dataset-upload"), {"project": value}).status_code == 404
