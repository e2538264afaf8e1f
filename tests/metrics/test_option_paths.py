"""Path-valued metric options (issue 24, findings 1 and 2): only files inside the operator's
directories, never opened by the web process, one answer for every refusal."""

import json
import os
import sys

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from annotations.models import Project
from metrics.models import MetricRun, RunStatus
from metrics.scorers import files
from metrics.scorers.errors import MetricError, OptionError
from metrics.scorers.loading import resolve_model_path
from metrics.services import run_execute_sync
from tests.annotations.factories import MembershipFactory, UserFactory
from tests.metrics.conftest import build_dataset

# Opens seen while `_watching` is set (an audit hook cannot be removed, so it checks a flag).
_watching: list[set] = []


def _audit(event, args):
    if _watching and event in ("open", "os.listdir", "os.scandir") and args and isinstance(args[0], (str, bytes)):
        _watching[-1].add(os.fsdecode(args[0]))


sys.addaudithook(_audit)

HOSTILE = ["/dev/zero", "/dev/urandom", "/etc/shadow", "/etc/passwd", "/nonexistent/file.json", "/etc"]


@pytest.fixture
def dirs(tmp_path, settings):
    data, models, outside = tmp_path / "data", tmp_path / "models", tmp_path / "outside"
    for d in (data, models, outside):
        d.mkdir()
    settings.WORKBENCH_DATA_DIRS = [str(data)]
    settings.WORKBENCH_MODEL_DIRS = [str(models)]
    return data, models, outside


def refusal(option, value, kind="data"):
    with pytest.raises(MetricError) as info:
        if kind == "model":
            resolve_model_path(value)
        else:
            files.read_bytes(option, value)
    return str(info.value)


def test_every_refusal_reads_the_same(dirs):
    data, _, outside = dirs
    (outside / "secret.json").write_text('{"k": 1}')
    (data / "link.json").symlink_to(outside / "secret.json")
    (data / "etc").symlink_to("/etc")
    (data / "sub").mkdir()
    os.mkfifo(data / "fifo")
    (data / "ok.json").write_text('{"a": "b"}')
    cases = HOSTILE + [
        str(outside / "secret.json"),
        str(data / "link.json"),
        "link.json",
        "etc/passwd",
        str(data / "sub"),
        str(data / "fifo"),
        "fifo",
        "../outside/secret.json",
        str(data / "missing.json"),
        "missing.json",
        str(data / ".." / "outside" / "secret.json"),
    ]
    answers = {refusal("templates_file", value) for value in cases}
    assert answers == {str(files.refused("templates_file"))}
    assert "not allowed or not found" in answers.pop()
    # Inside the directory: by absolute or relative path.
    assert files.read_bytes("templates_file", str(data / "ok.json")) == b'{"a": "b"}'
    assert files.read_bytes("templates_file", "ok.json") == b'{"a": "b"}'


def test_reads_are_bounded(dirs, settings):
    data, _, _ = dirs
    settings.WORKBENCH_METRIC_FILE_MAX_BYTES = 1000
    (data / "big.txt").write_bytes(b"x" * 1001)
    (data / "fits.txt").write_bytes(b"x" * 1000)
    with pytest.raises(OptionError, match="larger than 1000 bytes"):
        files.read_bytes("frequency_file", "big.txt")
    assert len(files.read_bytes("frequency_file", "fits.txt")) == 1000


def test_model_paths_existing_or_missing_answer_alike(dirs):
    _, models, outside = dirs
    (outside / "m").mkdir()
    (outside / "m" / "config.json").write_text("{}")
    (models / "inside").mkdir()
    (models / "inside" / "config.json").write_text("{}")
    (models / "escape").symlink_to(outside / "m")

    def shape(value):
        return refusal("model", value, kind="model").replace(repr(value[:200]), "NAME")

    answers = {
        shape(v)
        for v in [
            "/etc",
            "/usr/lib",
            "/nonexistent",
            str(outside / "m"),
            str(models / "escape"),
            "escape",
            str(models / "missing"),
            "acme/roberta-huge",
        ]
    }
    assert len(answers) == 1 and "not allowed or not found" in answers.pop()
    assert resolve_model_path(str(models / "inside")) == (models / "inside").resolve()
    assert resolve_model_path("inside") == (models / "inside").resolve()


def test_syntax_is_checked_without_the_disk():
    for bad in ("a\x00b", "x" * 2000, "", 3):
        with pytest.raises(OptionError):
            files.check_syntax("baseline", bad)


@pytest.fixture
def api_setup(db, dirs):
    project = Project.objects.create(name="Paths")
    dataset = build_dataset(name="paths-ds", items=2, systems=2, project=project)
    dataset.items.update(data=[["Blue Spice", "eatType", "pub"]])  # nli needs triples (refused at start otherwise)
    user = MembershipFactory(project=project, user=UserFactory(username="paths-owner"), role="owner").user
    api = APIClient()
    api.force_authenticate(user)
    return dataset, api


@pytest.mark.parametrize(
    "metric,option",
    [
        ("nli", "templates_file"),
        ("nli", "templates"),
        ("simplicity-bertscore", "frequency_file"),
        ("bertscore", "baseline"),
        ("bertscore", "model"),
    ],
)
def test_api_never_opens_the_path_and_the_run_fails_alike(api_setup, metric, option):
    """The probe's reproductions: /dev/zero read until memory ran out; /etc/shadow read and
    echoed; /etc/passwd used as an idf corpus; existing and missing paths told apart."""
    dataset, api = api_setup
    errors = set()
    for value in HOSTILE:
        seen: set = set()
        _watching.append(seen)
        try:
            resp = api.post(
                f"/api/datasets/{dataset.pk}/metric-runs/",
                {"metric": metric, "options": {option: value}},
                format="json",
            )
        finally:
            _watching.pop()
        assert resp.status_code == 201, resp.content
        assert not {p for p in seen if p == value or p.startswith(value + "/")}, seen  # not opened, not listed
        run = run_execute_sync(run=MetricRun.objects.get(pk=resp.json()["id"]))  # what a worker does
        assert run.status == RunStatus.FAILED
        errors.add(run.error.replace(repr(value), "NAME"))
    assert len(errors) == 1, errors
    error = errors.pop()
    assert "not allowed or not found" in error and (error.startswith(f"{option}:") or option == "model"), error


def test_api_refuses_bad_path_syntax_with_400(api_setup):
    dataset, api = api_setup
    resp = api.post(
        f"/api/datasets/{dataset.pk}/metric-runs/",
        {"metric": "nli", "options": {"templates_file": "a\x01b"}},
        format="json",
    )
    assert resp.status_code == 400 and "control characters" in resp.json()["detail"]


def test_allowed_templates_file_is_used(api_setup, dirs):
    data, _, _ = dirs
    (data / "t.json").write_text(json.dumps({"area": "<subject> is in <object>."}))
    from metrics.scorers.nli import NLIMetric

    metric = NLIMetric(templates_file="t.json")
    assert metric.templates == {"area": "<subject> is in <object>."}


def test_score_command_trusts_the_operators_paths_but_not_devices(tmp_path, dirs, capsys):
    """`score` runs in the operator's shell on their own files: any regular file, bounded."""
    _, _, outside = dirs
    hyp = outside / "hyp.txt"
    hyp.write_text("the cat\n")
    table = outside / "weights.tsv"
    table.write_text("the\t0.5\ncat\t0.9\n")
    with pytest.raises(CommandError, match="frequency_file: not allowed or not found"):
        call_command(
            "score",
            metric="simplicity-bertscore",
            hyp=str(hyp),
            ref=[str(hyp)],
            option=["frequency_file=/dev/zero", "device=cpu"],
        )
    call_command(
        "score",
        metric="simplicity-bertscore",
        hyp=str(hyp),
        ref=[str(hyp)],
        option=[f"frequency_file={table}", "device=cpu"],
    )
    assert "weights.tsv@" in capsys.readouterr().out
