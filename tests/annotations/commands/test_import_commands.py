import json
import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from annotations.models import Campaign, RatingJudgement
from tests.annotations.services.dbstate import table_counts

ROOT = Path(__file__).resolve().parents[3]


def run(*args) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.fixture
def dataset_file(tmp_path) -> Path:
    path = tmp_path / "d.jsonl"
    path.write_text(
        '{"item": "i1", "source": "s1", "references": ["r1"], "outputs": {"A": "a1", "B": "b1"}}\n'
        '{"item": "i2", "source": "s2", "outputs": {"A": "a2", "B": "b2"}}\n',
        encoding="utf-8",
    )
    return path


@pytest.mark.django_db
def test_import_dataset_json_summary_and_idempotence(dataset_file):
    out, _ = run("import_dataset", str(dataset_file), "--dataset", "d", "--project", "p", "--json")
    summary = json.loads(out)
    assert {k: summary[k] for k in ("dataset", "items", "outputs", "unchanged")} == {
        "dataset": "d",
        "items": 2,
        "outputs": 4,
        "unchanged": False,
    }
    again = json.loads(run("import_dataset", str(dataset_file), "--dataset", "d", "--json")[0])
    assert again["unchanged"] is True and again["outputs_created"] == 0


@pytest.mark.django_db
def test_import_dataset_csv_format_flag(tmp_path):
    path = tmp_path / "d.txt"
    path.write_text("item,source,output:A\ni1,s1,a1\n", encoding="utf-8")
    out, _ = run("import_dataset", str(path), "--dataset", "c", "--format", "csv", "--json")
    assert json.loads(out)["outputs"] == 1


@pytest.mark.django_db
def test_import_dataset_bad_lines_on_stderr_and_command_error(tmp_path, dataset_file):
    run("import_dataset", str(dataset_file), "--dataset", "d")
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"item": "i3", "source": "0123456789ab"}\n{"item": \n{"item": "i1", "source": "other"}\n')
    before = table_counts()
    err = StringIO()
    with pytest.raises(CommandError, match="3 problem"):
        call_command("import_dataset", str(bad), "--dataset", "d", "--max-text-chars", "10", stderr=err)
    lines = err.getvalue().splitlines()
    assert [line.split(":")[0] for line in lines] == ["line 1", "line 2", "line 3"]
    assert "limit is 10" in lines[0] and "different source" in lines[2]
    assert table_counts() == before


@pytest.mark.django_db
def test_create_campaign_parses_negative_scale_and_reports_bad_input(dataset_file, tmp_path):
    run("import_dataset", str(dataset_file), "--dataset", "d")
    instructions = tmp_path / "i.txt"
    instructions.write_text("Rate <b>fluency</b>.", encoding="utf-8")
    out, _ = run(
        "create_campaign",
        "--dataset",
        "d",
        "--name",
        "c",
        "--protocol",
        "likert",
        "--criteria",
        "fluency,adequacy",
        "--scale",
        "-3-3",
        "--redundancy",
        "3",
        "--instructions-file",
        str(instructions),
        "--json",
    )
    assert json.loads(out)["scale"] == [-3, 3]
    campaign = Campaign.objects.get(name="c")
    assert (campaign.criteria, campaign.redundancy, campaign.instructions) == (
        ["fluency", "adequacy"],
        3,
        "Rate <b>fluency</b>.",
    )
    rankme = json.loads(
        run(
            "create_campaign",
            "--dataset",
            "d",
            "--name",
            "r",
            "--protocol",
            "rankme",
            "--criteria",
            "naturalness",
            "--json",
        )[0]
    )
    assert rankme["scale"] == [None, None]
    for args, message in [
        (["--protocol", "likert", "--criteria", "x"], "--scale: "),
        (["--protocol", "likert", "--criteria", "x", "--scale", "5-1"], "minimum must be below"),
        (["--protocol", "pairwise", "--criteria", "x", "--scale", "1-5"], "no rating scale"),
        (["--protocol", "pairwise", "--criteria", " , "], "--criteria: "),
    ]:
        err = StringIO()
        with pytest.raises(CommandError):
            call_command("create_campaign", "--dataset", "d", "--name", "new", *args, stderr=err)
        assert message in err.getvalue()
    with pytest.raises(CommandError, match="no dataset called 'nope'"):
        call_command("create_campaign", "--dataset", "nope", "--name", "x", "--protocol", "pairwise", "--criteria", "x")
    assert Campaign.objects.count() == 2


@pytest.mark.django_db
def test_import_judgements_command(dataset_file, tmp_path):
    run("import_dataset", str(dataset_file), "--dataset", "d")
    run(
        "create_campaign",
        "--dataset",
        "d",
        "--name",
        "c",
        "--protocol",
        "likert",
        "--criteria",
        "fluency",
        "--scale",
        "1-5",
    )
    good = tmp_path / "j.jsonl"
    good.write_text(
        '{"item": "i1", "system": "A", "annotator": "w", "criterion": "fluency", "score": 4}\n'
        '{"item": "i2", "system": "B", "annotator": "w", "criterion": "fluency", "score": 2}\n'
    )
    assert json.loads(run("import_judgements", str(good), "--campaign", "c", "--json")[0]) == {
        "campaign": "c",
        "judgements": 2,
        "created": 2,
        "unchanged": False,
        "annotators_created": 1,
    }
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"item": "i1", "system": "B", "annotator": "w", "criterion": "fluency", "score": 9}\n')
    err = StringIO()
    with pytest.raises(CommandError):
        call_command("import_judgements", str(bad), "--campaign", "c", stderr=err)
    assert err.getvalue().strip() == "line 1: score 9 is outside the scale 1 to 5"
    assert RatingJudgement.objects.count() == 2


@pytest.mark.django_db(transaction=True)
def test_exit_codes_of_the_real_commands(dataset_file, tmp_path):
    """The shell contract: exit 0 + JSON on stdout, or non-zero + `line N: reason` on stderr."""
    db = connection.settings_dict
    env = dict(
        os.environ,
        DJANGO_SETTINGS_MODULE="workbench.settings.test",
        DATABASE_URL=f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
    )
    manage = [sys.executable, str(ROOT / "manage.py")]
    ok = subprocess.run(
        [*manage, "import_dataset", str(dataset_file), "--dataset", "d", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["items"] == 2
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"item": "x", "outputs": {"A": 1}}\n\xff\n')
    failed = subprocess.run(
        [*manage, "import_dataset", str(bad), "--dataset", "d", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert failed.returncode != 0 and failed.stdout == ""
    assert failed.stderr.splitlines()[:2] == [
        "line 1: output of system 'A' must be a string, got int",
        "line 2: not valid UTF-8 (byte 0xff at byte 1); save the file as UTF-8",
    ]
