"""The import commands on hostile input, run as a shell runs them: one
`line N: reason` per problem on stderr, a non-zero exit, never a traceback."""

import json
import os
import subprocess
import sys

import pytest
from django.db import connection

from tests.annotations.hostile import DATASET_LINES, GOOD_LINE, JUDGEMENT_LINES
from tests.annotations.services.dbstate import table_counts
from tests.conftest import ROOT


@pytest.mark.django_db(transaction=True)
def test_commands_report_hostile_lines_and_names_without_a_traceback(tmp_path):
    db = connection.settings_dict
    env = dict(
        os.environ,
        DJANGO_SETTINGS_MODULE="workbench.settings.test",
        DATABASE_URL=f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
    )

    def manage(*args):
        return subprocess.run(
            [sys.executable, str(ROOT / "manage.py"), *args], env=env, capture_output=True, timeout=120
        )

    good = tmp_path / "good.jsonl"
    good.write_bytes(GOOD_LINE + b"\n" + b'{"item": "i1", "outputs": {"A": "a"}}\n')
    assert manage("import_dataset", str(good), "--dataset", "d").returncode == 0
    assert (
        manage(
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
        ).returncode
        == 0
    )
    before = table_counts()

    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"\n".join(line for line, _ in DATASET_LINES.values()) + b"\n")
    failed = manage("import_dataset", str(bad), "--dataset", "d", "--json")
    stderr = failed.stderr.decode()
    assert failed.returncode != 0 and failed.stdout == b""
    assert "Traceback" not in stderr
    lines = stderr.splitlines()
    for number, (_, reason) in enumerate(DATASET_LINES.values(), 1):
        assert lines[number - 1].startswith(f"line {number}: ") and reason in lines[number - 1], lines

    judgements = tmp_path / "j.jsonl"
    judgements.write_bytes(b"\n".join(line for line, _ in JUDGEMENT_LINES.values()) + b"\n")
    failed = manage("import_judgements", str(judgements), "--campaign", "c")
    stderr = failed.stderr.decode()
    assert failed.returncode != 0 and "Traceback" not in stderr
    assert [line.split(":")[0] for line in stderr.splitlines()[:4]] == ["line 1", "line 2", "line 3", "line 4"]

    # Undecodable bytes in a name on the command line (Python hands them over as lone surrogates).
    for args in (
        ["import_dataset", str(good), "--dataset", b"d\xff"],
        ["import_dataset", str(good), "--dataset", "e", "--project", b"p\xfe"],
        ["import_judgements", str(good), "--campaign", b"c\xff"],
    ):
        failed = manage(*args)
        stderr = failed.stderr.decode(errors="replace")
        assert failed.returncode != 0 and "Traceback" not in stderr, stderr
        assert "lone surrogate" in stderr
    assert table_counts() == before
    # The good file still imports (nothing above left a lock or half a dataset behind).
    ok = manage("import_dataset", str(good), "--dataset", "d", "--json")
    assert ok.returncode == 0 and json.loads(ok.stdout)["unchanged"] is True
